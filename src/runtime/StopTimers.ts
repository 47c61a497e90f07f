/**
 * `auto_stop_seconds` and `idle_sleep_seconds` (extensions.md §5): once a second, machines whose
 * time ran out get a `stop` operation with `stop_reason` `auto_stop` or `idle_sleep`, accepted like
 * any other change. Its idempotency key names the boot (`<reason>:<machine>:<boot id>`), so a tick
 * that races the actor, or a restart of svc, never stops a machine twice for one boot. Reading the
 * machines table each tick (not timers in memory) makes PATCHed values and restarts just work.
 */
import { Clock, Effect, Layer, Schedule } from "effect"
import { MachinesRepo } from "../persistence/MachinesRepo.js"
import { Machines } from "../services/Machines.js"

const tick = Effect.gen(function*() {
  const machines = yield* MachinesRepo
  const service = yield* Machines
  const now = yield* Clock.currentTimeMillis
  for (const machine of yield* machines.dueForStop(now)) {
    yield* service.change(
      {
        organizationId: machine.organization_id,
        userId: machine.created_by,
        idempotencyKey: `${machine.reason}:${machine.id}:${machine.boot_id ?? "none"}`
      },
      machine.id,
      "stop",
      { force: false, stop_reason: machine.reason }
    ).pipe(
      // The machine changed meanwhile (a user stopped or deleted it): nothing to do.
      Effect.catchAll((error) => Effect.logDebug("timed stop not accepted", error._tag))
    )
  }
})

export const layer = Layer.scopedDiscard(
  tick.pipe(
    Effect.catchAllCause((cause) => Effect.logError("stop timers tick failed", cause)),
    Effect.repeat(Schedule.spaced("1 second")),
    Effect.forkScoped
  )
)
