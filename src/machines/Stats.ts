/**
 * A machine's use against its size's limits (GET /v1/machines/{id}/stats), and the per-machine
 * series of /metrics, both read from the driver's `stats` at the moment they are asked for: nothing
 * is sampled in the background. docs/observability.md "Machine use".
 */
import { Clock, Context, Effect, Layer } from "effect"
import { realSleep } from "../drivers/HostProcess.js"
import { MachineDriver, type MachineUsage } from "../drivers/MachineDriver.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { type SizeLimits, sizesOf } from "../kernel/config/MachineSizes.js"
import { Gauges } from "../kernel/metrics/Gauges.js"
import { HostLease } from "../kernel/sql/HostLease.js"
import { type MachineRow, MachinesRepo, type RunningBoot } from "../runtime/MachinesRepo.js"
import { Machines } from "./Machines.js"

/** The CPU window of the route: two readings this far apart (real time: machines do not run on the Clock). */
export const cpuWindowMillis = 250

export interface StatsReading {
  readonly machine: MachineRow
  readonly limits: SizeLimits
  readonly usage: MachineUsage
  /** Average CPUs busy over the window; undefined when the machine does not run. */
  readonly usedCpus: number | undefined
  readonly readAt: number
}

/** A driver without `stats` still counts CPU time. */
const usageOf = (driver: MachineDriver["Type"], id: string) =>
  driver.stats !== undefined
    ? driver.stats(id)
    : Effect.map(driver.cpuSeconds(id), (cpuSeconds): MachineUsage => ({ running: false, cpuSeconds }))

const make = Effect.gen(function*() {
  const driver = yield* MachineDriver
  const machines = yield* Machines
  const repo = yield* MachinesRepo
  const { hostId } = yield* HostLease
  const gauges = yield* Gauges
  const sizes = sizesOf(yield* AppConfig)

  /**
   * Every running machine's use on this node's host (another host's are read from its own node's
   * /metrics), read once per scrape: a scrape reads the series in the order they
   * are registered, so the first one reads and the others take what it read.
   */
  let last: ReadonlyArray<readonly [RunningBoot, MachineUsage]> | undefined
  const readUsage = Effect.gen(function*() {
    const boots = yield* repo.runningBoots(hostId)
    const rows = yield* Effect.forEach(boots, (boot) =>
      usageOf(driver, boot.id).pipe(
        Effect.map((usage) => [[boot, usage] as const]),
        // A machine that stopped between the query and the read: left out of this scrape.
        Effect.orElseSucceed(() => [])
      ))
    last = rows.flat().filter(([, usage]) => usage.running)
    return last
  })
  const lastUsage = Effect.suspend(() => last === undefined ? readUsage : Effect.succeed(last))
  let registered = 0

  const series = (
    name: string,
    help: string,
    value: (usage: MachineUsage, limits: SizeLimits) => number | undefined,
    type: "gauge" | "counter" = "gauge"
  ) =>
    gauges.register({
      name,
      help,
      type,
      read: Effect.map(registered++ === 0 ? readUsage : lastUsage, (rows) =>
        rows.flatMap(([boot, usage]) => {
          const figure = value(usage, sizes[boot.size])
          return figure === undefined
            ? []
            : [{ labels: { machine: boot.id, organization: boot.organization_id }, value: figure }]
        }))
    })
  const mib = 1024 ** 2
  yield* series(
    "svc_machine_cpu_seconds_total",
    "CPU seconds a machine used since it was created",
    (u) => u.cpuSeconds,
    "counter"
  )
  yield* series(
    "svc_machine_memory_bytes",
    "Memory a running machine uses (inactive page cache left out)",
    (u) => u.memoryBytes
  )
  yield* series(
    "svc_machine_memory_limit_bytes",
    "A running machine's memory limit",
    (u, limits) => u.memoryLimitBytes ?? limits.memory_mib * mib
  )
  yield* series("svc_machine_disk_used_bytes", "Bytes in use on a running machine's disk", (u) => u.diskUsedBytes)
  yield* series(
    "svc_machine_disk_size_bytes",
    "A running machine's disk size",
    (u, limits) => u.diskSizeBytes ?? limits.disk_mib * mib
  )
  yield* series("svc_machine_processes", "Processes and threads of a running machine", (u) => u.processes)
  yield* series(
    "svc_machine_processes_limit",
    "A running machine's limit of processes and threads",
    (u, limits) => u.processesLimit ?? limits.processes
  )

  return {
    /** The organization's machine's use now; 404 for a machine of another organization. */
    of: (organizationId: string, machineId: string) =>
      Effect.gen(function*() {
        const machine = yield* machines.find(organizationId, machineId)
        const limits = sizes[machine.size]
        const first = yield* Effect.orDie(usageOf(driver, machineId))
        if (!first.running) {
          return { machine, limits, usage: first, usedCpus: undefined, readAt: yield* Clock.currentTimeMillis }
        }
        const startedAt = performance.now()
        yield* realSleep(cpuWindowMillis)
        const usage = yield* Effect.orDie(usageOf(driver, machineId))
        const seconds = (performance.now() - startedAt) / 1_000
        const usedCpus = usage.running ? Math.max(0, usage.cpuSeconds - first.cpuSeconds) / seconds : undefined
        return { machine, limits, usage, usedCpus, readAt: yield* Clock.currentTimeMillis }
      })
  }
})

export class MachineStats extends Context.Tag("svc/machines/MachineStats")<
  MachineStats,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(MachineStats, make)
}
