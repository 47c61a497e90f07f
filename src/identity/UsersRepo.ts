import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { Prepared } from "../kernel/sql/Sqlite.js"

export interface UserRow {
  readonly id: string
  readonly email: string
  readonly created_at: number
  readonly last_sign_in_at: number | null
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const prepared = yield* Prepared
  const findByEmail = (email: string) =>
    sql<UserRow>`SELECT * FROM users WHERE email = ${email}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0])))
  return {
    // Every authenticated request runs this one (prepared: src/kernel/sql/Sqlite.ts).
    findById: (id: string) => prepared.first<UserRow>("SELECT * FROM users WHERE id = ?", id),
    findByEmail: (email: string) => Effect.orDie(findByEmail(email)),
    /** The addresses of these users (a member list's). */
    addresses: (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed(new Map<string, string>())
        : sql<{ id: string; email: string }>`SELECT id, email FROM users WHERE ${sql.in("id", ids)}`.pipe(
          Effect.map((rows) => new Map(rows.map((row) => [row.id, row.email]))),
          Effect.orDie
        ),
    /** The user with this address, created if new; `created` says which. */
    ensure: (email: string, now: number) =>
      Effect.gen(function*() {
        const id = uuidv7()
        yield* sql`INSERT INTO users (id, email, created_at) VALUES (${id}, ${email}, ${now})
          ON CONFLICT (email) DO NOTHING`
        const user = Option.getOrThrow(yield* findByEmail(email))
        return { user, created: user.id === id }
      }).pipe(Effect.orDie),
    touchSignIn: (id: string, now: number) =>
      Effect.orDie(sql`UPDATE users SET last_sign_in_at = ${now} WHERE id = ${id}`)
  }
})

export class UsersRepo extends Context.Tag("svc/identity/UsersRepo")<UsersRepo, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(UsersRepo, make)
}
