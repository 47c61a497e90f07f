/**
 * Accepted operations per second through HTTP, with FULL durability (every 202 is answered after
 * its operation row and idempotency record are committed with synchronous=FULL).
 * Baseline, same run: as many single-row inserts through better-sqlite3 with the same settings
 * and no HTTP, one transaction each (what a naive insert-then-202 server does per request).
 *
 *   node --import tsx bench/accepts.ts [operations=20000] [concurrency=64]
 *
 * The operations are `stop` of stopped machines: cheap to carry out, so the figure is the accept
 * path (HTTP, authentication, validation, group commit), not the sandbox.
 * Then it waits until the machines' actors have carried every operation out and prints the
 * server's CPU time per operation (accept and execution), which varies less than the rate on a
 * shared machine.
 */
import Database from "better-sqlite3"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { cpuMillis, createMachine, httpClient, ms, pool, serve, settled, summary, tempDir } from "./support.js"

const total = Number(process.argv[2] ?? 20_000)
const concurrency = Number(process.argv[3] ?? 64)
const machineCount = 50

const baseline = () => {
  const dir = tempDir("baseline")
  const db = new Database(NodePath.join(dir, "baseline.db"))
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = FULL")
  db.exec(
    "CREATE TABLE operations (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, request TEXT, created_at BIGINT)"
  )
  const insert = db.prepare("INSERT INTO operations (id, request, created_at) VALUES (?, ?, ?)")
  const started = performance.now()
  for (let i = 0; i < total; i++) insert.run(crypto.randomUUID(), `{"force":false,"n":${i}}`, Date.now())
  const seconds = (performance.now() - started) / 1000
  db.close()
  NodeFs.rmSync(dir, { recursive: true, force: true })
  return total / seconds
}

const main = async () => {
  const served = await serve({ SVC_RUNTIME: "process", SVC_BILLING: "unlimited" })
  const client = httpClient(served, concurrency)
  try {
    const machines: Array<{ machine_id: string; operation_id: string }> = []
    for (let i = 0; i < machineCount; i++) machines.push(await createMachine(client, `m${i}`, { start: false }))
    for (const machine of machines) await settled(client, machine.operation_id, 5)
    // Warm up the path.
    await pool(
      machines,
      concurrency,
      async (m) => void (await client.call("POST", `/v1/machines/${m.machine_id}/stop`, {}))
    )

    const latencies: Array<number> = []
    let rejected = 0
    const targets = Array.from({ length: total }, (_, i) => machines[i % machineCount]!.machine_id)
    const lastOperation = new Map<string, string>()
    const cpuBefore = cpuMillis(served.child.pid!)
    const started = performance.now()
    await pool(targets, concurrency, async (id) => {
      const t0 = performance.now()
      const reply = await client.call("POST", `/v1/machines/${id}/stop`, {})
      latencies.push(performance.now() - t0)
      if (reply.status !== 202) rejected++
      // Ids are UUIDv7, made in acceptance order: the greatest is the machine's last operation.
      else if (reply.body.operation_id > (lastOperation.get(id) ?? "")) lastOperation.set(id, reply.body.operation_id)
    })
    const seconds = (performance.now() - started) / 1000
    // A machine's operations run in acceptance order: its last one ends after all the others.
    for (const operationId of lastOperation.values()) await settled(client, operationId, 5)
    const drained = (performance.now() - started) / 1000
    const cpuPerOperation = (cpuMillis(served.child.pid!) - cpuBefore) / total
    const rate = total / seconds
    const latency = summary(latencies)
    const base = baseline()
    console.log(`accepted operations: ${total} over ${concurrency} connections, ${rejected} not 202`)
    console.log(`svc HTTP accepts:    ${rate.toFixed(0)} ops/s   p50 ${ms(latency.p50)}   p99 ${ms(latency.p99)}`)
    console.log(`all carried out:     after ${drained.toFixed(1)} s`)
    console.log(`svc CPU per op:      ${ms(cpuPerOperation)} (server process, user + system, accept and execution)`)
    console.log(`baseline inserts:    ${base.toFixed(0)} rows/s (better-sqlite3, WAL, synchronous=FULL, one tx each)`)
    console.log(`ratio svc/baseline:  ${(rate / base).toFixed(2)}`)
  } finally {
    await client.close()
    await served.stop()
    // The machines were never started (process driver): their folders are all there is.
    NodeFs.rmSync(served.dataDir, { recursive: true, force: true })
  }
}

await main()
