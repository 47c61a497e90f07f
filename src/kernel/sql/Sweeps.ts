/**
 * Housekeeping, one general mechanism: each owner of a table deletes its own rows that outlived
 * their use (docs/architecture.md "Tables and their owners"), once an hour on the Clock (so
 * TestClock drives it), each sweep in its own fiber. A sweep's writes are applied ahead of the
 * disk (GroupCommit.applied): it answers nobody, and one lost to a crash is done again by the next.
 * Each sweep runs on one node at a time (Singletons.ts): several nodes over one database sweep once.
 */
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { GroupCommit } from "./GroupCommit.js"
import { Singletons } from "./Singletons.js"

const every = Duration.hours(1)

/** A layer that runs `sweep(now)` now and then every hour, in one transaction of the group commit. */
export const hourly = <R>(name: string, sweep: (now: number) => Effect.Effect<void, never, R>) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const commit = yield* GroupCommit
    const singletons = yield* Singletons
    const context = yield* Effect.context<R>()
    const once = Effect.flatMap(Clock.currentTimeMillis, (now) => commit.applied(Effect.provide(sweep(now), context)))
      .pipe(
        Effect.catchAllCause((cause) => Effect.logError(`housekeeping failed: ${name}`, cause))
      )
    yield* Effect.forkScoped(singletons.run(`housekeeping: ${name}`, Effect.repeat(once, Schedule.spaced(every))))
  }))
