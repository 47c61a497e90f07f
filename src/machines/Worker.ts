/**
 * `auto_stop_seconds` and `idle_sleep_seconds` (extensions.md §5): running machines whose time ran
 * out get a `stop` operation with `stop_reason` `auto_stop` or `idle_sleep`, accepted like any
 * other change. Its idempotency key names the boot (`<reason>:<machine>:<boot id>`), so a check
 * that races the actor, or a restart of svc, never stops a machine twice for one boot.
 *
 * The timers live in the machines table, not in memory, so PATCHed values and restarts just work.
 * One fiber sleeps until the earliest timer runs out, and is woken early when a machine boots or
 * its settings change. A machine that is due but still has operations to run is looked at again a
 * second later (work in flight is activity; its turn comes first).
 *
 * The timers run on one node at a time (Singletons.ts); every node wakes them through the signals
 * (`machine timers`), and on PostgreSQL they look again at least every 10 s (Signals.ts `poll`),
 * the safety net for a signal lost on the way. Two nodes stopping at once would still stop once:
 * the stop's idempotency key names the boot.
 */
import { Clock, Duration, Effect, Layer, Queue } from "effect"
import { type DomainEvent, DomainEvents } from "../kernel/events/DomainEvents.js"
import { Signals } from "../kernel/events/Signals.js"
import { IdleHolds } from "../kernel/IdleHolds.js"
import { Singletons } from "../kernel/sql/Singletons.js"
import { MachinesRepo } from "../runtime/MachinesRepo.js"
import { Machines } from "./Machines.js"

const busyRetry = Duration.seconds(1)
/** The signals' channel that wakes the timers. */
const channel = "machine timers"

export const layer = Layer.scopedDiscard(Effect.gen(function*() {
  const machines = yield* MachinesRepo
  const service = yield* Machines
  const bus = yield* DomainEvents
  const holds = yield* IdleHolds

  const stopDue = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    for (const machine of yield* machines.dueForStop(now, yield* holds.held)) {
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

  /** The events that move a timer: a boot or a settings change (the bus hands over no other). */
  const movesTimer = (event: DomainEvent) =>
    (event._tag === "MachineEvent" && event.type === "machine.ready") || event._tag === "MachineSettingsChanged"
  const events = yield* bus.subscribe(movesTimer)
  const signals = yield* Signals
  // Every node: what moves a timer, to the timers wherever they run.
  yield* Effect.forkScoped(Effect.forever(Effect.zipRight(events.take, signals.notify(channel))))

  /** The node that holds the timers: stops what is due, sleeps until the next timer or signal. */
  const timing = Effect.scoped(Effect.gen(function*() {
    const heard = yield* signals.subscribe(channel)
    /** Completes at the next signal; the ones sent with it count as one. */
    const changed = Queue.takeBetween(heard, 1, Number.POSITIVE_INFINITY)

    /** Completes at the next timer, or at once when a machine boots or its settings change. */
    const nextWake = Effect.gen(function*() {
      const due = yield* machines.nextTimerDue(yield* holds.held)
      const now = yield* Clock.currentTimeMillis
      const wait = due === null ? Duration.infinity : due <= now ? busyRetry : Duration.millis(due - now)
      yield* Effect.raceFirst(Effect.raceFirst(Effect.sleep(wait), changed), signals.poll)
    })

    return yield* stopDue.pipe(
      Effect.zipRight(nextWake),
      Effect.catchAllCause((cause) =>
        Effect.logError("stop timers failed", cause).pipe(Effect.zipRight(Effect.sleep(busyRetry)))
      ),
      Effect.forever
    )
  }))
  yield* Effect.forkScoped((yield* Singletons).run("machine stop timers", timing))
}))
