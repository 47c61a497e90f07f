/**
 * The abuse guard (docs/operators.md): every `SVC_ABUSE_SAMPLE_SECONDS` it reads the CPU time of each
 * watched running machine from the driver's own accounting (`cpuSeconds`: the machine's cgroup, or
 * its processes' /proc times), applies the window rule (CpuWindow.ts) and stops a machine whose use
 * stayed high through a whole window, with `stop_reason` `abuse`. The flag is written in the stop's
 * transaction, and the stop's key names the boot, so a repeat opens no second flag.
 *
 * What it remembers between samples lives in memory: after a restart of svc a window starts again
 * (a machine gets at most one window more), which keeps a sample free of writes.
 *
 * Per host, not once-only: each node samples its own host's machines (their cgroups are on its
 * host; the lease gives each host one node). The decision needs no lock of its own: the stop is
 * accepted under the machine's row lock with a key naming the boot, so a second decision for the
 * same window, from whatever node, replays the first stop and opens no second flag.
 */
import { Effect, Either } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { AppConfig, defaultAbuseGuard } from "../kernel/config/AppConfig.js"
import { sizesOf } from "../kernel/config/MachineSizes.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { Entitlements } from "../kernel/Entitlements.js"
import { HostLease } from "../kernel/sql/HostLease.js"
import { Machines } from "../machines/Machines.js"
import { EngineReads, type RunningBoot } from "../runtime/EngineReads.js"
import { AbuseFlags } from "./AbuseFlags.js"
import { type CpuRule, type Due, step, type Track } from "./CpuWindow.js"

export interface SampleSummary {
  /** Machines whose CPU time was read. */
  readonly watched: number
  /** Machines stopped by this sample. */
  readonly stopped: number
}

export const makeAbuseGuard = Effect.gen(function*() {
  const config = yield* AppConfig
  const settings = config.abuse ?? defaultAbuseGuard
  const sizes = sizesOf(config)
  const repo = (yield* EngineReads).machines
  const { hostId } = yield* HostLease
  const driver = yield* MachineDriver
  const entitlements = yield* Entitlements
  const machines = yield* Machines
  const flags = yield* AbuseFlags
  const rule: CpuRule = { cpuPermille: settings.cpuPermille, windowMillis: settings.windowSeconds * 1000 }
  const tracks = new Map<string, Track>()

  /** Whether the `trial` scope covers the organization; tiers are asked once per organization and sample. */
  const watches = (organizationId: string, tiers: Map<string, boolean>) =>
    Effect.suspend(() => {
      const known = tiers.get(organizationId)
      if (known !== undefined) return Effect.succeed(known)
      return Effect.map(entitlements.tierOf(organizationId), (tier) => {
        tiers.set(organizationId, tier === "trial")
        return tier === "trial"
      })
    })

  const stop = (machine: RunningBoot, due: Due) =>
    machines.change(
      {
        organizationId: machine.organization_id,
        userId: machine.created_by,
        idempotencyKey: `abuse:${machine.id}:${machine.boot_id}`
      },
      machine.id,
      "stop",
      { force: true, stop_reason: "abuse" },
      ({ now, operationId }) =>
        flags.open({
          id: uuidv7(now),
          organization_id: machine.organization_id,
          machine_id: machine.id,
          stop_operation_id: operationId,
          kind: "sustained_cpu",
          action: "stopped",
          min_cpu_permille: due.minPermille,
          window_seconds: settings.windowSeconds,
          window_start: due.windowStart,
          created_at: now,
          resolution: null,
          resolution_note: null,
          resolved_by: null,
          resolved_at: null
        })
    ).pipe(
      Effect.tap(() => Effect.logWarning("abuse guard stopped a machine", machine.id, due.minPermille)),
      Effect.as(1),
      // Stopped or deleted meanwhile: nothing to stop.
      Effect.catchAll((error) => Effect.as(Effect.logDebug("abuse stop not accepted", error._tag), 0))
    )

  /** One pass over the running machines. */
  const sample = Effect.gen(function*() {
    const tiers = new Map<string, boolean>()
    const seen = new Set<string>()
    let stopped = 0
    // Read synchronously per machine: each reading carries its own time, at no effect's cost.
    const clock = yield* Effect.clock
    for (const machine of yield* repo.runningBoots(hostId)) {
      if (settings.scope !== "all" && !(yield* watches(machine.organization_id, tiers))) continue
      const cpu = yield* Effect.either(driver.cpuSeconds(machine.id))
      if (Either.isLeft(cpu)) continue
      const at = clock.unsafeCurrentTimeMillis()
      seen.add(machine.id)
      const reading = { bootId: machine.boot_id, cpuSeconds: cpu.right, at, cpus: sizes[machine.size].cpus }
      const { due, track } = step(tracks.get(machine.id), reading, rule)
      tracks.set(machine.id, track)
      if (due !== undefined) {
        stopped += yield* stop(machine, due)
        tracks.delete(machine.id)
      }
    }
    for (const id of tracks.keys()) if (!seen.has(id)) tracks.delete(id)
    const summary: SampleSummary = { watched: seen.size, stopped }
    return summary
  })

  /** Whether some organization can be watched: no trial tier exists when billing is unlimited. */
  const watchesAnyone = settings.scope === "all" || (settings.scope === "trial" && config.billing === "metered")
  return { settings, sample, watchesAnyone }
})
