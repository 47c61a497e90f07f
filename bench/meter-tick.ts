/**
 * One meter tick with 10,000 running machines over 1,000 organizations, in-process on a real
 * SQLite file: each tick charges every organization what its machines' open spans cost since its
 * mark (a ledger row with the balance, the mark moved; no machine's meter is written), in pages of
 * 1,000 organizations, with the event loop free between them. Baseline, same run: the same number of
 * plain `UPDATE`s through better-sqlite3 in one transaction (what the cheapest meter writing one row
 * per machine would cost). A fourth tick is measured at an hour's end, when every organization
 * settles: every open span is closed into billing_usage and opened again. Figures: time per tick
 * (and the process's CPU time: the host is shared), the longest the event loop was blocked during
 * it, and the bytes allocated on the JS heap (exact when run as below: the young generation is big
 * enough that no collection runs during the measured work, which the script checks).
 *
 *   node --import tsx --expose-gc --max-semi-space-size=512 bench/meter-tick.ts [machines=10000] [organizations=1000]
 */
import Database from "better-sqlite3"
import { Context, Effect, Layer } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { performance, PerformanceObserver } from "node:perf_hooks"
import { servicesWith } from "../src/App.js"
import { Accounts } from "../src/billing/Accounts.js"
import { Meter } from "../src/billing/Meter.js"
import * as Drivers from "../src/drivers/Drivers.js"
import { AppConfig } from "../src/kernel/config/AppConfig.js"
import { testConfig } from "../test/support/TestServer.js"

const machineCount = Number(process.argv[2] ?? 10_000)
const organizationCount = Number(process.argv[3] ?? 1_000)
const gc = (globalThis as { gc?: () => void }).gc

let collections = 0
new PerformanceObserver((list) => (collections += list.getEntries().length)).observe({ entryTypes: ["gc"] })

/** Runs `work` and answers its time, the longest event-loop block during it, its heap allocation. */
const measure = async (work: () => Promise<unknown>) => {
  gc?.()
  // The longest gap between two turns of a 1 ms timer: how long the loop was held at once.
  let last = performance.now()
  let longest = 0
  const timer = setInterval(() => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
  }, 1)
  await sleep(2)
  // Counted after the wait: the forced collection's entry reaches the observer a turn later.
  const before = { collections, heap: process.memoryUsage().heapUsed }
  last = performance.now()
  const cpu = process.cpuUsage()
  const started = performance.now()
  await work()
  const ms = performance.now() - started
  const used = process.cpuUsage(cpu)
  const allocated = process.memoryUsage().heapUsed - before.heap
  await sleep(2)
  clearInterval(timer)
  return {
    ms,
    cpuMs: (used.user + used.system) / 1000,
    blockMs: longest,
    allocatedMiB: allocated / 2 ** 20,
    exact: gc !== undefined && collections === before.collections
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const baseline = async () => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-bench-meter-baseline-"))
  const db = new Database(NodePath.join(dir, "baseline.db"))
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  db.exec("CREATE TABLE meters (machine_id TEXT PRIMARY KEY, metered_until BIGINT NOT NULL, carry BIGINT NOT NULL)")
  const ids = Array.from({ length: machineCount }, () => NodeCrypto.randomUUID())
  const insert = db.prepare("INSERT INTO meters VALUES (?, 0, 0)")
  db.transaction(() => ids.forEach((id) => insert.run(id)))()
  const update = db.prepare("UPDATE meters SET metered_until = ?, carry = ? WHERE machine_id = ?")
  const results: Array<Awaited<ReturnType<typeof measure>>> = []
  for (let round = 0; round < 3; round++) {
    results.push(
      await measure(async () => {
        const now = Date.now()
        db.transaction(() => ids.forEach((id, i) => update.run(now, i % 3600, id)))()
      })
    )
  }
  db.close()
  NodeFs.rmSync(dir, { recursive: true, force: true })
  return results
}

const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-bench-meter-"))

const program = Effect.gen(function*() {
  // Hourly worker ticks: the bench runs the meter itself.
  const config = testConfig(dir, 9, { billing: "metered", meterSeconds: 3600 })
  const context = yield* Layer.build(
    servicesWith(Drivers.layer).pipe(Layer.provideMerge(Layer.succeed(AppConfig, config)))
  )
  const meter = Context.get(context, Meter)
  const accounts = Context.get(context, Accounts)
  // Organizations and running machines written directly: the bench measures the tick, not boots.
  const db = new Database(config.databaseFile)
  const organizations = Array.from({ length: organizationCount }, () => NodeCrypto.randomUUID())
  const started = Date.now() - 60_000
  db.transaction(() => {
    const org = db.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)")
    for (const id of organizations) org.run(id, "bench", started)
    const machine = db.prepare(`INSERT INTO machines (id, organization_id, created_by, name, state, projected_state,
      size, image, internet_access, source_kind, created_at, updated_at, started_at)
      VALUES (?, ?, 'bench', ?, 'running', 'running', 'small', 'default', 0, 'empty', ?, ?, ?)`)
    for (let i = 0; i < machineCount; i++) {
      machine.run(NodeCrypto.randomUUID(), organizations[i % organizationCount]!, `m${i}`, started, started, started)
    }
  })()
  db.close()
  yield* Effect.forEach(organizations, accounts.ensure, { discard: true })
  // The first tick makes every meter; the ones measured update them, as every later tick does.
  yield* meter.run()
  const ticks: Array<Awaited<ReturnType<typeof measure>>> = []
  for (let round = 0; round < 3; round++) {
    yield* Effect.promise(() => sleep(1_100))
    ticks.push(yield* Effect.promise(() => measure(() => Effect.runPromise(meter.run()))))
  }
  // A tick at an hour's end: every organization settles, every open span closed into billing_usage
  // and opened again (made so by moving the meters and marks an hour back), once an hour.
  const hourly = new Database(config.databaseFile)
  hourly.prepare("UPDATE billing_meters SET hour_start = hour_start - 3600000").run()
  hourly.prepare("UPDATE billing_meter_marks SET hour_start = hour_start - 3600000").run()
  hourly.close()
  yield* Effect.promise(() => sleep(1_100))
  const hourEnd = yield* Effect.promise(() => measure(() => Effect.runPromise(meter.run())))
  const plain = yield* Effect.promise(baseline)
  const show = (r: Awaited<ReturnType<typeof measure>>) =>
    `${r.ms.toFixed(0)} ms (${r.cpuMs.toFixed(0)} ms of CPU), longest event-loop block ${r.blockMs.toFixed(0)} ms, ${
      r.allocatedMiB.toFixed(1)
    } MiB allocated${r.exact ? "" : " (a collection ran: a lower bound)"}`
  console.log(`meter tick, ${machineCount} running machines over ${organizationCount} organizations:`)
  ticks.forEach((r, i) => console.log(`  tick ${i + 1}: ${show(r)}`))
  console.log(`  at an hour's end: ${show(hourEnd)}`)
  console.log(`baseline, ${machineCount} plain UPDATEs in one transaction:`)
  plain.forEach((r, i) => console.log(`  run ${i + 1}: ${show(r)}`))
  const best = (rs: typeof ticks) => Math.min(...rs.map((r) => r.ms))
  const bestCpu = (rs: typeof ticks) => Math.min(...rs.map((r) => r.cpuMs))
  console.log(`ratio (best tick / best baseline): ${(best(ticks) / best(plain)).toFixed(2)}x`)
  console.log(`ratio of CPU time (best tick / best baseline): ${(bestCpu(ticks) / bestCpu(plain)).toFixed(2)}x`)
  const leastAllocated = (rs: typeof ticks) => Math.min(...rs.map((r) => r.allocatedMiB))
  console.log(
    `ratio of allocations (least of a tick / least of the baseline): ${
      (leastAllocated(ticks) / leastAllocated(plain)).toFixed(2)
    }x`
  )
  console.log(`ratio at an hour's end (that tick / best baseline): ${(hourEnd.ms / best(plain)).toFixed(2)}x`)
})

// The data directory goes once the scope has closed the database (its last flush included).
Effect.runPromise(Effect.scoped(program)).then(() => 0, (error) => (console.error(error), 1)).then((code) => {
  NodeFs.rmSync(dir, { recursive: true, force: true })
  process.exit(code)
})
