import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

export interface OidcSignInRow {
  readonly id: string
  readonly state_hash: string
  readonly browser_hash: string
  readonly provider: string
  readonly return_to: string
  readonly link_user_id: string | null
  readonly created_at: number
  readonly expires_at: number
  readonly used_at: number | null
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    /** Records a sign-in under way; sign-ins that ended a day ago are dropped on the way. */
    insert: (row: OidcSignInRow) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM oidc_sign_ins WHERE expires_at < ${row.created_at - 24 * 3600_000}`
        yield* sql`INSERT INTO oidc_sign_ins ${sql.insert(row as any)}`
      }).pipe(sql.withTransaction, Effect.orDie),
    /** Uses the sign-in of this state once: the row, if it was open; later calls find nothing. */
    take: (stateHash: string, now: number) =>
      sql<OidcSignInRow>`UPDATE oidc_sign_ins SET used_at = ${now}
        WHERE state_hash = ${stateHash} AND used_at IS NULL RETURNING *`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )
  }
})

export class OidcSignInsRepo extends Context.Tag("svc/identity/OidcSignInsRepo")<
  OidcSignInsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(OidcSignInsRepo, make)
}
