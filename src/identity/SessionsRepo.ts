import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

export interface SessionRow {
  readonly id: string
  readonly token_hash: string
  readonly csrf_hash: string
  readonly user_id: string
  readonly active_organization_id: string | null
  readonly authenticated_at: number
  readonly created_at: number
  readonly expires_at: number
  readonly revoked_at: number | null
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    /** Deletes the sessions past their expiry (the hourly sweep). */
    deleteExpired: (now: number) => Effect.orDie(sql`DELETE FROM sessions WHERE expires_at <= ${now}`),
    insert: (row: SessionRow) => Effect.orDie(sql`INSERT INTO sessions ${sql.insert(row as any)}`),
    findByTokenHash: (tokenHash: string) =>
      sql<SessionRow>`SELECT * FROM sessions WHERE token_hash = ${tokenHash}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      ),
    revoke: (id: string, now: number) =>
      Effect.orDie(sql`UPDATE sessions SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL`),
    clearActiveOrganization: (organizationId: string, userId: string | null) =>
      Effect.orDie(
        userId === null
          ? sql`UPDATE sessions SET active_organization_id = NULL WHERE active_organization_id = ${organizationId}`
          : sql`UPDATE sessions SET active_organization_id = NULL
              WHERE active_organization_id = ${organizationId} AND user_id = ${userId}`
      ),
    setActiveOrganization: (id: string, organizationId: string | null) =>
      Effect.orDie(sql`UPDATE sessions SET active_organization_id = ${organizationId} WHERE id = ${id}`)
  }
})

export class SessionsRepo extends Context.Tag("svc/identity/SessionsRepo")<
  SessionsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(SessionsRepo, make)
}
