import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

export interface PortTokenRow {
  readonly id: string
  readonly token_hash: string
  readonly machine_id: string
  readonly port: number
  readonly created_by: string
  readonly created_at: number
  readonly expires_at: number
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    /** Deletes the tokens past their expiry (the hourly sweep). */
    deleteExpired: (now: number) => Effect.orDie(sql`DELETE FROM port_tokens WHERE expires_at <= ${now}`),
    insert: (row: PortTokenRow) => Effect.orDie(sql`INSERT INTO port_tokens ${sql.insert(row as any)}`),
    findByTokenHash: (tokenHash: string) =>
      sql<PortTokenRow>`SELECT * FROM port_tokens WHERE token_hash = ${tokenHash}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )
  }
})

export class PortTokensRepo extends Context.Tag("svc/ports/PortTokensRepo")<
  PortTokensRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(PortTokensRepo, make)
}
