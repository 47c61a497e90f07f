/**
 * The idempotency records of every accepting route, in one table: a key is scoped to the
 * organization (api.md), so it names one request whatever route it was used on. A record names
 * what the request made: an operation (machine changes, snapshots, fork, restore) or an agent turn
 * (a prompt; a steer or interrupt names its input too).
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

/** What a request with the key made: the answer a repeat of it gives again. */
export type KeyAnswer =
  | { readonly operation_id: string }
  | { readonly turn_id: string; readonly input_id: string | null }

export interface KeyRow {
  readonly organization_id: string
  readonly idempotency_key: string
  /** The route and its decoded body, hashed: a repeat must match it. */
  readonly fingerprint: string
  readonly operation_id: string | null
  readonly turn_id: string | null
  readonly input_id: string | null
  readonly created_at: number
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    find: (organizationId: string, key: string) =>
      sql<KeyRow>`SELECT * FROM idempotency_keys WHERE organization_id = ${organizationId}
        AND idempotency_key = ${key}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0])), Effect.orDie),
    insert: (row: {
      readonly organization_id: string
      readonly idempotency_key: string
      readonly fingerprint: string
      readonly created_at: number
    }, answer: KeyAnswer) => Effect.orDie(sql`INSERT INTO idempotency_keys ${sql.insert({ ...row, ...answer })}`)
  }
})

export class IdempotencyKeysRepo extends Context.Tag("svc/persistence/IdempotencyKeysRepo")<
  IdempotencyKeysRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(IdempotencyKeysRepo, make)
}
