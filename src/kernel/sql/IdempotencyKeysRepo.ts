/**
 * The idempotency records of every accepting route, in one table: a key is scoped to the
 * organization (api.md), so it names one request whatever route it was used on. A record names
 * what the request made: an operation (machine changes, snapshots, fork, restore) or an agent turn
 * (a prompt; a steer or interrupt names its input too).
 */
import { Context, Effect, Layer } from "effect"
import { Prepared } from "./Sqlite.js"

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
  // Every accept that carries a key runs these (prepared: src/kernel/sql/Sqlite.ts).
  const prepared = yield* Prepared
  return {
    find: (organizationId: string, key: string) =>
      prepared.first<KeyRow>(
        "SELECT * FROM idempotency_keys WHERE organization_id = ? AND idempotency_key = ?",
        organizationId,
        key
      ),
    insert: (row: {
      readonly organization_id: string
      readonly idempotency_key: string
      readonly fingerprint: string
      readonly created_at: number
    }, answer: KeyAnswer) => prepared.insert("idempotency_keys", { ...row, ...answer }),
    /** The keys made at `before` or earlier, with what each names (the sweep's candidates). */
    madeBefore: (before: number) =>
      prepared.all<Pick<KeyRow, "organization_id" | "idempotency_key" | "operation_id" | "turn_id">>(
        "SELECT organization_id, idempotency_key, operation_id, turn_id FROM idempotency_keys WHERE created_at <= ?",
        before
      ),
    remove: (keys: ReadonlyArray<Pick<KeyRow, "organization_id" | "idempotency_key">>) =>
      prepared.runMany(
        "DELETE FROM idempotency_keys WHERE organization_id = ? AND idempotency_key = ?",
        keys.map((key) => [key.organization_id, key.idempotency_key])
      )
  }
})

export class IdempotencyKeysRepo extends Context.Tag("svc/kernel/sql/IdempotencyKeysRepo")<
  IdempotencyKeysRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(IdempotencyKeysRepo, make)
}
