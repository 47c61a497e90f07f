import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { Preset } from "../kernel/domain/Access.js"
import { Prepared } from "../kernel/sql/Sqlite.js"

export interface ApiKeyRow {
  readonly id: string
  readonly key_id: string
  readonly secret_hash: string
  readonly organization_id: string
  readonly created_by: string
  readonly name: string
  readonly preset: Preset
  readonly last_four: string
  readonly created_at: number
  readonly expires_at: number
  readonly last_used_at: number | null
  readonly revoked_at: number | null
}

/** A key with its creator's address (their role is organizations', asked by ApiKeys.authenticate). */
export interface ApiKeyWithOwner extends ApiKeyRow {
  /** Null when the creator no longer exists. */
  readonly owner_email: string | null
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const prepared = yield* Prepared
  return {
    insert: (row: ApiKeyRow) => Effect.orDie(sql`INSERT INTO api_keys ${sql.insert(row as any)}`),
    // Every request with a key runs this one: one prepared statement (src/kernel/sql/Sqlite.ts)
    // instead of two lookups (key, user).
    findByKeyId: (keyId: string) =>
      prepared.first<ApiKeyWithOwner>(
        `SELECT k.*, u.email AS owner_email FROM api_keys k LEFT JOIN users u ON u.id = k.created_by
          WHERE k.key_id = ?`,
        keyId
      ),
    findById: (organizationId: string, id: string) =>
      sql<ApiKeyRow>`SELECT * FROM api_keys WHERE id = ${id} AND organization_id = ${organizationId}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      ),
    listByOrganization: (organizationId: string) =>
      sql<ApiKeyRow>`SELECT * FROM api_keys WHERE organization_id = ${organizationId}
        ORDER BY created_at DESC, id`.pipe(Effect.orDie),
    revoke: (id: string, now: number) =>
      Effect.orDie(sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL`),
    /** Revokes the live keys of the organization (of one creator when `userId` is given); answers how many. */
    revokeHeldBy: (organizationId: string, userId: string | null, now: number) =>
      (userId === null
        ? sql<{ id: string }>`UPDATE api_keys SET revoked_at = ${now}
            WHERE organization_id = ${organizationId} AND revoked_at IS NULL AND expires_at > ${now} RETURNING id`
        : sql<{ id: string }>`UPDATE api_keys SET revoked_at = ${now} WHERE organization_id = ${organizationId}
            AND created_by = ${userId} AND revoked_at IS NULL AND expires_at > ${now} RETURNING id`).pipe(
          Effect.map((rows) => rows.length),
          Effect.orDie
        ),
    touch: (id: string, now: number) => Effect.orDie(sql`UPDATE api_keys SET last_used_at = ${now} WHERE id = ${id}`)
  }
})

export class ApiKeysRepo extends Context.Tag("svc/identity/ApiKeysRepo")<
  ApiKeysRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(ApiKeysRepo, make)
}
