/**
 * A machine's use (GET /v1/machines/{id}/stats and the per-machine series of /metrics) on a real
 * sandbox machine: a memory hog, fifty sleeping processes, a busy loop and a 64 MiB file inside,
 * each judged from the host (the machine's cgroup files and its mounted disk) and through the
 * route. A member of another organization gets 404; a stopped machine answers its state with null
 * for what only a running one has, and leaves /metrics.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { cliFor } from "../support/Cli.js"
import { client } from "../support/Http.js"
import { change, eventually, runningMachine, sh } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const mib = 1024 ** 2

/** The value of the one sample named exactly `series` (name and labels), if present. */
const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

/** A figure of the machine's groups read from the host, in whichever folder holds it. */
const hostFigure = (groups: ReadonlyArray<string>, file: string) => {
  for (const dir of groups) {
    const path = NodePath.join(dir, file)
    if (NodeFs.existsSync(path)) return Number(NodeFs.readFileSync(path, "utf8").trim())
  }
  return undefined
}

describe("machine stats", { timeout: 240_000 }, () => {
  it.scopedLive("memory, processes, CPU and disk as the host sees them; 404 for another organization", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ operatorToken: Option.some(Redacted.make("op-secret")) })
      const owner = yield* server.bootstrap("stats@example.com")
      const api = client(server.url, { key: owner.api_key })
      const id = yield* runningMachine(api, "busy", { size: "small" })
      const stats = (caller = api) => caller("GET", `/v1/machines/${id}/stats`)

      const idle = yield* stats()
      assert.strictEqual(idle.status, 200, idle.text)
      assert.strictEqual(idle.body.state, "running")
      assert.strictEqual(idle.body.size, "small")
      assert.isString(idle.body.boot_id)
      // The small size's limits, as its cgroups and its image hold them.
      assert.strictEqual(idle.body.cpu.limit_cpus, 1)
      assert.strictEqual(idle.body.memory.limit_bytes, 1024 * mib)
      assert.strictEqual(idle.body.processes.limit, 1024)
      assert.strictEqual(idle.body.disk.size_bytes, 10 * 1024 * mib)

      // 200 MiB held by a Perl string, 50 sleepers, a busy loop and a 64 MiB file written through.
      const loaded = yield* sh(
        api,
        id,
        "perl -e '$x = \"x\" x (200 * 1024 * 1024); open my $f, \">\", \"/tmp/hog-ready\"; close $f; sleep 600' " +
          ">/dev/null 2>&1 &\n" +
          "for i in $(seq 50); do sleep 600 >/dev/null 2>&1 & done\n" +
          "perl -e '1 while 1' >/dev/null 2>&1 &\n" +
          "dd if=/dev/urandom of=/root/blob bs=1M count=64 status=none && sync -f /root/blob"
      )
      assert.strictEqual(loaded.exec_result?.exit_code, 0, JSON.stringify(loaded))

      const run = JSON.parse(
        NodeFs.readFileSync(NodePath.join(server.config.dataDir, "machines", id, "run.json"), "utf8")
      )
      const groups: ReadonlyArray<string> = run.groups
      // The hog holds its 200 MiB once Perl has built the string and made its file: waited for from the host.
      const ready = NodePath.join(server.config.dataDir, "machines", id, "disk", "tmp", "hog-ready")
      yield* eventually(Effect.sync(() => NodeFs.existsSync(ready) ? true : undefined))
      const busy = yield* stats()
      assert.strictEqual(busy.status, 200, busy.text)
      const hostMemory = hostFigure(groups, "memory.usage_in_bytes") ?? hostFigure(groups, "memory.current")!
      assert.isAtLeast(busy.body.memory.used_bytes, 200 * mib)
      assert.isAtMost(busy.body.memory.used_bytes, hostMemory + 16 * mib, "page cache is left out, never added")
      const hostPids = hostFigure(groups, "pids.current")!
      assert.isAtLeast(hostPids, 52)
      assert.isAtLeast(busy.body.processes.current, 52)
      assert.isAtMost(Math.abs(busy.body.processes.current - hostPids), 5)
      // The busy loop, held to one CPU by the size's quota (a loaded host may give it less).
      assert.isAbove(busy.body.cpu.used_cpus, 0.1)
      assert.isAtMost(busy.body.cpu.used_cpus, 1.2)
      assert.strictEqual(busy.body.cpu.window_seconds, 0.25)
      assert.isAbove(busy.body.cpu.seconds_total, idle.body.cpu.seconds_total)
      const disk = NodeFs.statfsSync(NodePath.join(server.config.dataDir, "machines", id, "disk"))
      const hostDiskUsed = (disk.blocks - disk.bfree) * disk.bsize
      assert.isAtLeast(busy.body.disk.used_bytes, 64 * mib)
      assert.isAtMost(Math.abs(busy.body.disk.used_bytes - hostDiskUsed), 8 * mib)

      // The CLI: a table by the machine's name, and the route's answer as JSON.
      const cli = yield* cliFor(server.url, owner.api_key)
      const table = yield* cli.run(["machines", "stats", "busy"])
      assert.strictEqual(table.code, 0, table.stderr)
      const lines = table.stdout.trimEnd().split("\n")
      assert.match(lines[0]!, /^running, small; read \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; [\d.]+ CPU seconds/)
      assert.match(lines[1]!, /^RESOURCE +USED +LIMIT +OF LIMIT$/)
      assert.match(lines[2]!, /^cpu +[\d.]+ CPUs +1 CPUs +[\d.]+%$/)
      assert.match(lines[3]!, /^memory +[\d.]+ MiB +1\.0 GiB +[\d.]+%$/)
      assert.match(lines[4]!, /^disk +[\d.]+ MiB +10\.0 GiB +[\d.]+%$/)
      assert.match(lines[5]!, /^processes +\d+ +1024 +[\d.]+%$/)
      const asJson = yield* cli.run(["machines", "stats", id, "--json"])
      assert.strictEqual(asJson.code, 0, asJson.stderr)
      assert.strictEqual(JSON.parse(asJson.stdout).memory.limit_bytes, 1024 * mib)

      // Another organization's member: the machine does not exist for them.
      const stranger = yield* server.bootstrap("stranger@example.com")
      const foreign = yield* stats(client(server.url, { key: stranger.api_key }))
      assert.strictEqual(foreign.status, 404)
      assert.strictEqual(foreign.body.code, "resource_not_found")
      assert.notInclude(foreign.text, "memory")

      // The per-machine series, for the operator.
      const operator = client(server.url, { headers: { "x-svc-operator-token": "op-secret" } })
      const labels = `{machine="${id}",organization="${owner.organization_id}"}`
      const text = (yield* operator("GET", "/metrics")).text
      assert.include(text, "# TYPE svc_machine_cpu_seconds_total counter\n")
      assert.isAbove(sample(text, `svc_machine_cpu_seconds_total${labels}`) ?? 0, 0)
      assert.isAtLeast(sample(text, `svc_machine_memory_bytes${labels}`) ?? 0, 200 * mib)
      assert.strictEqual(sample(text, `svc_machine_memory_limit_bytes${labels}`), 1024 * mib)
      assert.isAtLeast(sample(text, `svc_machine_processes${labels}`) ?? 0, 52)
      assert.strictEqual(sample(text, `svc_machine_processes_limit${labels}`), 1024)
      assert.isAtLeast(sample(text, `svc_machine_disk_used_bytes${labels}`) ?? 0, 64 * mib)
      assert.strictEqual(sample(text, `svc_machine_disk_size_bytes${labels}`), 10 * 1024 * mib)
      assert.strictEqual((yield* api("GET", "/metrics")).status, 401, "a member's key does not read /metrics")

      // Stopped: its state, its CPU total and its disk; null for what only a running machine has.
      yield* change(api, "POST", `/v1/machines/${id}/stop`, { force: true })
      const stopped = yield* stats()
      assert.strictEqual(stopped.status, 200, stopped.text)
      assert.strictEqual(stopped.body.state, "stopped")
      assert.isNull(stopped.body.boot_id)
      assert.isNull(stopped.body.memory.used_bytes)
      assert.isNull(stopped.body.processes.current)
      assert.isNull(stopped.body.cpu.used_cpus)
      assert.isAtLeast(stopped.body.cpu.seconds_total, busy.body.cpu.seconds_total)
      assert.isAtLeast(stopped.body.disk.used_bytes, 64 * mib)
      const after = (yield* operator("GET", "/metrics")).text
      assert.notInclude(after, `machine="${id}"`)
    }))
})
