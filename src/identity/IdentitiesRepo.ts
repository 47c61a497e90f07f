import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

/** `provider` is an OIDC provider's name, or `email` for a further address of the user. */
export interface IdentityRow {
  readonly provider: string
  readonly subject: string
  readonly user_id: string
  readonly email: string | null
  readonly created_at: number
}

export const EMAIL_PROVIDER = "email"

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    find: (provider: string, subject: string) =>
      sql<IdentityRow>`SELECT * FROM identities WHERE provider = ${provider} AND subject = ${subject}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      ),
    /** The user an address belongs to: as their own address, or linked to them. */
    userOfAddress: (email: string) =>
      sql<{ id: string }>`SELECT id FROM users WHERE email = ${email}
        UNION SELECT user_id AS id FROM identities WHERE provider = ${EMAIL_PROVIDER} AND subject = ${email}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]?.id)),
        Effect.orDie
      ),
    /** Links an identity unless (provider, subject) already belongs to someone. */
    insert: (row: IdentityRow) =>
      sql`INSERT INTO identities ${sql.insert(row as any)} ON CONFLICT (provider, subject) DO NOTHING`.pipe(
        Effect.asVoid,
        Effect.orDie
      ),
    ofUser: (userId: string) =>
      sql<IdentityRow>`SELECT * FROM identities WHERE user_id = ${userId} ORDER BY created_at`.pipe(Effect.orDie)
  }
})

export class IdentitiesRepo extends Context.Tag("svc/identity/IdentitiesRepo")<
  IdentitiesRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(IdentitiesRepo, make)
}
