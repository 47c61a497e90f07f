/**
 * Housekeeping: once an hour (on the Clock, so TestClock drives it) rows that outlived their use are
 * deleted: port tokens and sessions past their expiry, email sign-ins a day past theirs, and
 * idempotency keys (of operations and of agent turns) older than a day whose work has settled. A
 * key of open work is kept however old it is: repeating the request must pick that work up (api.md,
 * `uncertain`).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"

/** How long an idempotency key replays its operation (docs/operations.md). */
export const idempotencyRetention = Duration.hours(24)
const every = Duration.hours(1)
const day = Duration.toMillis(Duration.days(1))

export const sweep = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const commit = yield* GroupCommit
  const now = yield* Clock.currentTimeMillis
  // Written ahead of the disk (GroupCommit.applied): a sweep answers nobody, and one lost to a crash
  // is done again by the next. The next sweep's wait starts at once, not after a flush.
  yield* commit.applied(Effect.orDie(Effect.gen(function*() {
    yield* sql`DELETE FROM port_tokens WHERE expires_at <= ${now}`
    yield* sql`DELETE FROM sessions WHERE expires_at <= ${now}`
    yield* sql`DELETE FROM email_sign_ins WHERE expires_at <= ${now - day}`
    // A key names an operation or an agent turn: kept while the one it names is open.
    yield* sql`DELETE FROM idempotency_keys WHERE created_at <= ${now - Duration.toMillis(idempotencyRetention)}
      AND (operation_id IS NULL
        OR operation_id NOT IN (SELECT id FROM operations WHERE status IN ('pending', 'running', 'uncertain')))
      AND (turn_id IS NULL OR turn_id NOT IN (SELECT id FROM agent_turns WHERE status IN ('starting', 'running')))`
  })))
})

export const layer = Layer.scopedDiscard(
  sweep.pipe(
    Effect.catchAllCause((cause) => Effect.logError("housekeeping failed", cause)),
    Effect.repeat(Schedule.spaced(every)),
    Effect.forkScoped
  )
)
