/** SQL of the terminals area: its tickets and their one use (schema/migrations/0016_terminals.sql). */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

export interface TerminalRow {
  readonly id: string
  readonly ticket_hash: string
  readonly organization_id: string
  readonly machine_id: string
  readonly created_by: string
  readonly width_cols: number
  readonly height_rows: number
  /** A JSON array of arguments, or null for the login shell. */
  readonly command: string | null
  readonly created_at: number
  readonly expires_at: number
  readonly opened_at: number | null
  readonly closed_at: number | null
  readonly revoked_at: number | null
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const count = (rows: ReadonlyArray<{ readonly id: string }>) => rows.length
  return {
    insert: (row: TerminalRow) => Effect.orDie(sql`INSERT INTO terminals ${sql.insert(row as any)}`),
    /**
     * Uses the ticket: marks it opened if it is unused, unrevoked and unexpired at `now`, in one
     * statement, so two connections racing with one ticket get it once.
     */
    claim: (ticketHash: string, now: number) =>
      sql<TerminalRow>`UPDATE terminals SET opened_at = ${now}
        WHERE ticket_hash = ${ticketHash} AND opened_at IS NULL AND revoked_at IS NULL AND expires_at > ${now}
        RETURNING *`.pipe(Effect.map((rows) => Option.fromNullable(rows[0])), Effect.orDie),
    close: (id: string, now: number) =>
      Effect.orDie(sql`UPDATE terminals SET closed_at = ${now} WHERE id = ${id} AND closed_at IS NULL`),
    /** At start: no WebSocket outlives the process that held it. */
    closeAllOpen: (now: number) =>
      Effect.orDie(sql`UPDATE terminals SET closed_at = ${now} WHERE opened_at IS NOT NULL AND closed_at IS NULL`),
    /** The machines with a terminal open now (kernel/IdleHolds.ts). */
    machinesWithOpenTerminal: sql<{ machine_id: string }>`SELECT DISTINCT machine_id FROM terminals
      WHERE opened_at IS NOT NULL AND closed_at IS NULL`.pipe(
      Effect.map((rows) => rows.map((row) => row.machine_id)),
      Effect.orDie
    ),
    /** Voids the unused, unexpired tickets of the organization (of one member when `userId` is given). */
    revokeUnused: (organizationId: string, userId: string | null, now: number) =>
      sql<{ id: string }>`UPDATE terminals SET revoked_at = ${now}
        WHERE organization_id = ${organizationId}
          ${userId === null ? sql`` : sql`AND created_by = ${userId}`}
          AND opened_at IS NULL AND revoked_at IS NULL AND expires_at > ${now}
        RETURNING id`.pipe(Effect.map(count), Effect.orDie)
  }
})

export class TerminalsRepo extends Context.Tag("svc/terminals/TerminalsRepo")<
  TerminalsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(TerminalsRepo, make)
}
