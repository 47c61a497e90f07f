/**
 * Exec round trip: `POST /v1/machines/{id}/exec` of `true` until the operation is seen terminal,
 * p50 and p99, on the sandbox driver. Baseline, same run: spawning the same sandboxed `true`
 * directly (`nsenter` into the running sandbox, what the driver does, with no HTTP or database).
 * Also: create-to-running of new sandboxed machines, one after another, split at the 202 (the
 * accept) and with the server's CPU time per create.
 *
 *   node --import tsx bench/exec-roundtrip.ts [iterations=300] [creates=60]
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { Pool } from "undici"
import { awaitEnd, cpuMillis, createMachine, httpClient, ms, serve, settled, summary } from "./support.js"

const iterations = Number(process.argv[2] ?? 300)
const creates = Number(process.argv[3] ?? 60)

const rawExec = (pid: number) =>
  new Promise<void>((resolve, reject) => {
    const child = NodeChild.spawn("nsenter", ["-t", String(pid), "-a", "-r", "-w", "true"], { stdio: "ignore" })
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`nsenter exited ${code}`))))
  })

const main = async () => {
  const served = await serve({ SVC_RUNTIME: "sandbox" })
  const client = httpClient(served, 4)
  try {
    // The client waits on the operation's event stream (no polling load on the server).
    const events = new Pool(served.url, { connections: 2 })
    const boots: Array<number> = []
    const accepts: Array<number> = []
    let machineId = ""
    // Five creates to warm the server up, not counted.
    const cpuBeforeCreates = cpuMillis(served.child.pid!)
    for (let i = -5; i < creates; i++) {
      const t0 = performance.now()
      const created = await createMachine(client, `boot${i}`)
      const t1 = performance.now()
      await awaitEnd(served, events, created.operation_id)
      if (i >= 0) {
        boots.push(performance.now() - t0)
        accepts.push(t1 - t0)
      }
      machineId = created.machine_id
    }
    const cpuPerCreate = (cpuMillis(served.child.pid!) - cpuBeforeCreates) / (creates + 5)
    if ((await settled(client, (await createMachine(client, "check")).operation_id)).status !== "succeeded") {
      throw new Error("a create did not succeed")
    }
    const run = JSON.parse(
      NodeFs.readFileSync(NodePath.join(served.dataDir, "machines", machineId, "run.json"), "utf8")
    )
    const pid = Number(run.pid)

    const measure = async (once: () => Promise<void>) => {
      for (let i = 0; i < 20; i++) await once()
      const samples: Array<number> = []
      for (let i = 0; i < iterations; i++) {
        const t0 = performance.now()
        await once()
        samples.push(performance.now() - t0)
      }
      return summary(samples)
    }
    // The server's CPU time over the whole measure (warm-up included), per exec.
    const cpuBefore = cpuMillis(served.child.pid!)
    const viaApi = await measure(async () => {
      const accepted = await client.call("POST", `/v1/machines/${machineId}/exec`, { command: ["true"] })
      await awaitEnd(served, events, accepted.body.operation_id)
    })
    const cpuPerExec = (cpuMillis(served.child.pid!) - cpuBefore) / (iterations + 20)
    const check = await settled(
      client,
      (await client.call("POST", `/v1/machines/${machineId}/exec`, { command: ["true"] })).body.operation_id
    )
    if (check.exec_result?.exit_code !== 0) throw new Error(JSON.stringify(check))
    await events.close()
    const raw = await measure(() => rawExec(pid))
    const boot = summary(boots)
    const accepted = summary(accepts)
    console.log(`create to running (sandbox): p50 ${ms(boot.p50)}   p99 ${ms(boot.p99)}   (${boots.length} machines)`)
    console.log(`  of which the 202:          p50 ${ms(accepted.p50)}   p99 ${ms(accepted.p99)}`)
    console.log(`svc CPU per create:         ${ms(cpuPerCreate)} (server process, user + system)`)
    console.log(`exec true via API:          p50 ${ms(viaApi.p50)}   p99 ${ms(viaApi.p99)}   (${iterations} runs)`)
    console.log(`svc CPU per exec:           ${ms(cpuPerExec)} (server process, user + system)`)
    console.log(`baseline nsenter true:      p50 ${ms(raw.p50)}   p99 ${ms(raw.p99)}`)
    console.log(`overhead p50: ${ms(viaApi.p50 - raw.p50)}   ratio p50: ${(viaApi.p50 / raw.p50).toFixed(2)}`)
  } finally {
    await client.close()
    await served.stop()
    NodeChild.execFileSync(process.execPath, ["--import", "tsx", "bench/cleanup.ts", served.dataDir])
  }
}

await main()
