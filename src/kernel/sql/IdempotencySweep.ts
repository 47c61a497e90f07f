/**
 * The idempotency keys' sweep (each owner sweeps its own rows: Sweeps.ts): keys older than a day
 * whose work has settled are deleted every hour. A key of open work is kept however old it is:
 * repeating the request must pick that work up (api.md, `uncertain`). Which work is open the owners
 * of that work answer, through a port each: the engine for operations, the agents area for turns.
 */
import { Context, Duration, Effect, Layer } from "effect"
import { IdempotencyKeysRepo } from "./IdempotencyKeysRepo.js"
import * as Sweeps from "./Sweeps.js"

/** How long an idempotency key replays its operation (docs/operations.md). */
export const idempotencyRetention = Duration.hours(24)

/** The port "which operations are still open?" (the runtime fills it). Few: the work in flight. */
export class OpenOperations extends Context.Tag("svc/kernel/sql/OpenOperations")<
  OpenOperations,
  Effect.Effect<ReadonlyArray<string>>
>() {}

/** The port "which agent turns are still open?" (the agents area fills it). */
export class OpenTurns extends Context.Tag("svc/kernel/sql/OpenTurns")<
  OpenTurns,
  Effect.Effect<ReadonlyArray<string>>
>() {}

/** The sweep, in one transaction: the open work is read in the same one as the keys. */
export const layer = Sweeps.hourly("idempotency keys", (now) =>
  Effect.gen(function*() {
    const keys = yield* IdempotencyKeysRepo
    const expired = yield* keys.madeBefore(now - Duration.toMillis(idempotencyRetention))
    if (expired.length === 0) return
    const openOperations = new Set(yield* yield* OpenOperations)
    const openTurns = new Set(yield* yield* OpenTurns)
    yield* keys.remove(expired.filter((key) =>
      (key.operation_id === null || !openOperations.has(key.operation_id)) &&
      (key.turn_id === null || !openTurns.has(key.turn_id))
    ))
  })).pipe(Layer.provide(IdempotencyKeysRepo.layer))
