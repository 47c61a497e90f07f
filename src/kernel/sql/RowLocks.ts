/**
 * Locks held until the end of the transaction that takes them, for the read-then-write steps that
 * several nodes may run at once on one PostgreSQL database (docs/scale-out.md "Shared state"): an
 * accept reads a machine's projected state, a count limit counts an organization's rows, an
 * idempotency check looks for a key, and each then writes what it decided. Under READ COMMITTED
 * a statement sees what was committed before it began, so a transaction that waits for the lock
 * and then reads sees the other's writes.
 *
 * On SQLite every lock is nothing: its one writer already runs one transaction at a time.
 * Taken in this order when a transaction takes several (no two orders, no deadlock): an idempotency
 * key, then a machine, then an organization, then the placement (src/runtime/Placement.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The tables whose rows are locked by id. */
export type LockedTable = "machines" | "organizations" | "agent_conversations"

export const makeRowLocks = Effect.map(SqlClient.SqlClient, (sql) => {
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  return {
    /** True on PostgreSQL, where these locks do something. */
    shared: pg,
    /** Locks the row `id` of `table` (a row that does not exist locks nothing). */
    row: (table: LockedTable, id: string): Effect.Effect<void> =>
      pg
        ? Effect.orDie(Effect.asVoid(sql.unsafe(`SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE`, [id])))
        : Effect.void,
    /**
     * Locks a name that has no row yet (an idempotency key before its record exists): a
     * transaction-scoped advisory lock on its hash. Two names with one hash only wait for each other.
     */
    name: (name: string): Effect.Effect<void> =>
      pg
        ? Effect.orDie(Effect.asVoid(sql.unsafe("SELECT pg_advisory_xact_lock(hashtext($1))", [name])))
        : Effect.void
  }
})

export type RowLocks = Effect.Effect.Success<typeof makeRowLocks>
