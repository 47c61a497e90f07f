/**
 * The abuse guard's sample over 10,000 running machines, in-process: the guard lists the running
 * machines from the database, asks each one's CPU time from the driver and applies the window rule.
 * The driver's `cpuSeconds` reads a per-machine counter file in the cgroup v2 format (`cpu.stat`,
 * `usage_usec`) through the sandbox driver's own reader, so both sides read the same counters.
 * Baseline, same run: the same 10,000 counters read in a plain loop (no database, no Effect, no rule).
 * Rounds alternate guard and baseline; medians are printed with their ratio.
 *
 *   node --import tsx bench/abuse-sample.ts [machines=10000] [rounds=7]
 */
import { Context, Effect, Layer } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { servicesWith } from "../src/App.js"
import * as Drivers from "../src/drivers/Drivers.js"
import { MachineDriver } from "../src/drivers/MachineDriver.js"
import * as Cgroups from "../src/drivers/sandbox/Cgroups.js"
import { Accounts } from "../src/identity/Accounts.js"
import { AppConfig, type AppConfigShape } from "../src/kernel/config/AppConfig.js"
import { uuidv7 } from "../src/kernel/domain/Ids.js"
import { HostLease } from "../src/kernel/sql/HostLease.js"
import { makeAbuseGuard } from "../src/operator/AbuseGuard.js"
import { MachinesRepo } from "../src/runtime/MachinesRepo.js"
import { testConfig } from "../test/support/TestServer.js"

const machineCount = Number(process.argv[2] ?? 10_000)
const rounds = Number(process.argv[3] ?? 7)

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const main = Effect.gen(function*() {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-bench-abuse-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true })))
  const counters = NodePath.join(dir, "counters")
  const groupOf = (id: string) => NodePath.join(counters, id)
  // The guard of the services is off: this bench drives its own sampler.
  const config: AppConfigShape = testConfig(dir, 9, {
    runtime: "process",
    abuse: { scope: "off", sampleSeconds: 30, cpuPermille: 900, windowSeconds: 900 }
  })
  const driver = Layer.effect(
    MachineDriver,
    Effect.map(MachineDriver, (inner) => ({
      ...inner,
      cpuSeconds: (id: string) => Effect.sync(() => Cgroups.cpuSeconds([groupOf(id)]) ?? 0)
    }))
  ).pipe(Layer.provide(Drivers.layer))
  const context = yield* Layer.build(servicesWith(driver).pipe(Layer.provideMerge(Layer.succeed(AppConfig, config))))

  const owner = yield* Context.get(context, Accounts).bootstrap("bench@example.com")
  const repo = Context.get(context, MachinesRepo)
  // The guard samples its own host's machines only.
  const { hostId } = Context.get(context, HostLease)
  const ids: Array<string> = []
  const now = Date.now()
  for (let i = 0; i < machineCount; i++) {
    const id = uuidv7()
    ids.push(id)
    NodeFs.mkdirSync(groupOf(id), { recursive: true })
    NodeFs.writeFileSync(NodePath.join(groupOf(id), "cpu.stat"), `usage_usec ${i}\nuser_usec ${i}\nsystem_usec 0\n`)
    yield* repo.insert({
      id,
      organization_id: owner.organization_id,
      created_by: owner.user_id,
      name: `m${i}`,
      state: "running",
      projected_state: "running",
      size: "small",
      image: "default",
      environment_id: null,
      environment_version: null,
      internet_access: 0,
      auto_stop_seconds: null,
      idle_sleep_seconds: null,
      setup_script: null,
      boot_id: `boot-${i}`,
      last_stop_reason: null,
      source_kind: "empty",
      source_id: null,
      created_at: now,
      updated_at: now,
      started_at: now,
      stopped_at: null,
      deleted_at: null,
      last_activity_at: null,
      ports: "[]",
      host_id: hostId
    })
  }

  const guard = yield* makeAbuseGuard.pipe(
    Effect.provideService(AppConfig, { ...config, abuse: { ...config.abuse!, scope: "all" } }),
    Effect.provide(context)
  )
  const plain = () => {
    let total = 0
    for (const id of ids) total += Cgroups.cpuSeconds([groupOf(id)]) ?? 0
    return total
  }

  const guardMs: Array<number> = []
  const plainMs: Array<number> = []
  const listMs: Array<number> = []
  for (let round = 0; round < rounds + 1; round++) {
    let started = performance.now()
    const summary = yield* guard.sample
    const guardTook = performance.now() - started
    if (summary.watched !== machineCount) throw new Error(`the guard read ${summary.watched} machines`)
    started = performance.now()
    plain()
    const plainTook = performance.now() - started
    started = performance.now()
    yield* repo.runningBoots(hostId)
    const listTook = performance.now() - started
    // The first round warms both up (and sets the guard's baselines).
    if (round > 0) {
      guardMs.push(guardTook)
      plainMs.push(plainTook)
      listMs.push(listTook)
    }
  }
  const g = median(guardMs)
  const p = median(plainMs)
  console.log(`abuse guard sample over ${machineCount} running machines, ${rounds} rounds (medians):`)
  console.log(`  guard (database list + driver.cpuSeconds + window rule): ${g.toFixed(1)} ms`)
  console.log(`  plain loop reading the same counters:                    ${p.toFixed(1)} ms`)
  console.log(`  of which listing the running boots alone:              ${median(listMs).toFixed(1)} ms`)
  console.log(`  ratio guard / plain: ${(g / p).toFixed(2)}; per machine: ${(g * 1000 / machineCount).toFixed(1)} µs`)
  console.log(`  guard rounds: ${guardMs.map((v) => v.toFixed(0)).join(", ")} ms`)
  console.log(`  plain rounds: ${plainMs.map((v) => v.toFixed(0)).join(", ")} ms`)
})

Effect.runPromise(Effect.scoped(main)).catch((error) => {
  console.error(error)
  process.exit(1)
})
