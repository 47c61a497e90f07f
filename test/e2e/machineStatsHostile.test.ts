/**
 * A machine's use as a hostile tenant shapes it, judged from the host: its root tries to make child
 * cgroups, move itself into them and raise its own limits, fills its disk to the last block, and
 * runs a fork bomb up to its process limit. The host's files keep the size's limits, the stats route
 * and the operator's /metrics still answer with the machine's own figures (what the host's cgroup
 * and statfs say, never more than the limits), another machine still runs commands, and a forced
 * stop ends every process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { defaultSizes } from "../../src/kernel/config/MachineSizes.js"
import { client } from "../support/Http.js"
import { change, eventually, runningMachine, sh } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const mib = 1024 ** 2
const limits = { cpus: 1, memory_mib: 256, disk_mib: 64, processes: 64 }

const hostFigure = (groups: ReadonlyArray<string>, file: string) => {
  for (const dir of groups) {
    const path = NodePath.join(dir, file)
    if (NodeFs.existsSync(path)) return Number(NodeFs.readFileSync(path, "utf8").trim())
  }
  return undefined
}

const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

/** What the machine's root tries against its cgroups: make, join and widen (each may be refused). */
const widen = [
  "for d in /sys/fs/cgroup /sys/fs/cgroup/*; do",
  "  mkdir \"$d/evil\" 2>/dev/null && echo $$ > \"$d/evil/cgroup.procs\" 2>/dev/null",
  "  echo max > \"$d/pids.max\" 2>/dev/null; echo max > \"$d/memory.max\" 2>/dev/null",
  "  echo -1 > \"$d/memory.limit_in_bytes\" 2>/dev/null; echo -1 > \"$d/cpu.cfs_quota_us\" 2>/dev/null",
  "done; exit 0"
].join("\n")

describe("machine stats under a hostile tenant", { timeout: 300_000 }, () => {
  it.scopedLive("child groups, raised limits, a full disk and a fork bomb: the figures stay the machine's own", () =>
    Effect.gen(function*() {
      const server = yield* startServer({
        operatorToken: Option.some(Redacted.make("op-secret")),
        sizes: { ...defaultSizes, small: limits }
      })
      const owner = yield* server.bootstrap("hostile@example.com")
      const api = client(server.url, { key: owner.api_key })
      const operator = client(server.url, { headers: { "x-svc-operator-token": "op-secret" } })
      const id = yield* runningMachine(api, "hostile", { size: "small" })
      const bystander = yield* runningMachine(api, "bystander", { size: "small" })
      const folder = NodePath.join(server.config.dataDir, "machines", id)
      const groups: ReadonlyArray<string> = JSON.parse(NodeFs.readFileSync(NodePath.join(folder, "run.json"), "utf8"))
        .groups
      const stats = () => api("GET", `/v1/machines/${id}/stats`)

      // Its cgroups: whatever the machine could write, the host's limit files still hold the size.
      assert.strictEqual((yield* sh(api, id, widen)).status, "succeeded")
      assert.strictEqual(hostFigure(groups, "pids.max"), limits.processes)
      const memoryLimit = hostFigure(groups, "memory.limit_in_bytes") ?? hostFigure(groups, "memory.max")
      assert.strictEqual(memoryLimit, limits.memory_mib * mib)

      // Its disk, to the last block: the route says what the host's statfs of the disk says.
      yield* sh(api, id, "dd if=/dev/zero of=/root/fill bs=1M 2>/dev/null; sync; exit 0")
      const full = yield* stats()
      assert.strictEqual(full.status, 200, full.text)
      const disk = NodeFs.statfsSync(NodePath.join(folder, "disk"))
      const hostUsed = (disk.blocks - disk.bfree) * disk.bsize
      assert.isAtMost(Math.abs(full.body.disk.used_bytes - hostUsed), 4 * mib)
      assert.isAtMost(full.body.disk.used_bytes, full.body.disk.size_bytes)
      assert.isAtLeast(full.body.disk.used_bytes, full.body.disk.size_bytes * 0.8, "the disk is full")

      // A fork bomb: children that sleep, a parent that forks again whenever one fails.
      yield* sh(
        api,
        id,
        "nohup perl -e 'while (1) { my $p = fork; if (defined $p && $p == 0) { sleep 600; exit } }' >/dev/null 2>&1 & exit 0"
      )
      yield* eventually(
        Effect.sync(() => (hostFigure(groups, "pids.current") ?? 0) >= limits.processes - 2 ? true : undefined)
      )
      const bombed = yield* stats()
      assert.strictEqual(bombed.status, 200, bombed.text)
      const hostPids = hostFigure(groups, "pids.current")!
      assert.isAtMost(hostPids, limits.processes, "the host holds the machine to its limit")
      assert.isAtMost(bombed.body.processes.current, limits.processes)
      assert.isAtMost(Math.abs(bombed.body.processes.current - hostPids), 4)
      assert.isAtMost(bombed.body.memory.used_bytes, limits.memory_mib * mib)
      const scraped = yield* operator("GET", "/metrics")
      assert.strictEqual(scraped.status, 200)
      const labels = `{machine="${id}",organization="${owner.organization_id}"}`
      assert.isAtMost(sample(scraped.text, `svc_machine_processes${labels}`)!, limits.processes)
      assert.strictEqual(sample(scraped.text, `svc_machine_processes_limit${labels}`), limits.processes)
      assert.isAtMost(sample(scraped.text, `svc_machine_disk_used_bytes${labels}`)!, limits.disk_mib * mib)

      // Another machine of the host runs commands while the bomb goes on.
      const echoed = yield* sh(api, bystander, "echo still-here")
      assert.strictEqual(echoed.exec_result?.exit_code, 0, JSON.stringify(echoed))

      // A forced stop ends the bomb: no process is left in the machine's groups.
      yield* change(api, "POST", `/v1/machines/${id}/stop`, { force: true })
      for (const dir of groups) {
        const procs = NodePath.join(dir, "cgroup.procs")
        if (NodeFs.existsSync(procs)) assert.strictEqual(NodeFs.readFileSync(procs, "utf8").trim(), "", dir)
      }
      const stopped = yield* stats()
      assert.strictEqual(stopped.body.state, "stopped")
    }))
})
