/**
 * The idempotency keys' sweep (each owner sweeps its own rows: kernel/sql/Sweeps.ts): keys (of
 * operations and of agent turns) older than a day whose work has settled are deleted every hour. A
 * key of open work is kept however old it is: repeating the request must pick that work up (api.md,
 * `uncertain`). It still reads agent_turns (schema/table-owners.json lists the exception).
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"
import * as Sweeps from "../kernel/sql/Sweeps.js"

/** How long an idempotency key replays its operation (docs/operations.md). */
export const idempotencyRetention = Duration.hours(24)

export const layer = Sweeps.hourly(
  "idempotency keys",
  (now) =>
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.orDie(Effect.gen(function*() {
        // A key names an operation or an agent turn: kept while the one it names is open.
        yield* sql`DELETE FROM idempotency_keys WHERE created_at <= ${now - Duration.toMillis(idempotencyRetention)}
      AND (operation_id IS NULL
        OR operation_id NOT IN (SELECT id FROM operations WHERE status IN ('pending', 'running', 'uncertain')))
      AND (turn_id IS NULL OR turn_id NOT IN (SELECT id FROM agent_turns WHERE status IN ('starting', 'running')))`
      })))
)
