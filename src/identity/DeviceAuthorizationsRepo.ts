import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { Preset } from "../kernel/domain/Access.js"

export type DeviceStatus = "pending" | "approved" | "denied" | "issued"

export interface DeviceAuthorizationRow {
  readonly id: string
  readonly device_code_hash: string
  readonly user_code_hash: string
  readonly client_name: string
  readonly requested_scope: Preset
  readonly status: DeviceStatus
  readonly interval_seconds: number
  readonly last_polled_at: number | null
  readonly created_at: number
  readonly expires_at: number
  readonly decided_by: string | null
  readonly decided_at: number | null
  readonly organization_id: string | null
  readonly preset: Preset | null
  readonly key_name: string | null
  readonly key_expires_in_days: number | null
  readonly api_key_id: string | null
}

export interface Decision {
  readonly status: "approved" | "denied"
  readonly decidedBy: string
  readonly decidedAt: number
  readonly organizationId: string
  readonly preset: Preset | null
  readonly keyName: string | null
  readonly keyExpiresInDays: number | null
}

const first = Effect.map((rows: ReadonlyArray<DeviceAuthorizationRow>) => Option.fromNullable(rows[0]))

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    /** Inserts a request; false when its user code is taken (a collision: draw another). */
    insert: (row: DeviceAuthorizationRow) =>
      Effect.gen(function*() {
        // Requests that ended a day ago go: their codes cannot be used any more.
        yield* sql`DELETE FROM device_authorizations WHERE expires_at < ${row.created_at - 24 * 3600_000}`
        const inserted = yield* sql`INSERT INTO device_authorizations ${sql.insert(row as any)}
          ON CONFLICT (user_code_hash) DO NOTHING RETURNING id`
        return inserted.length > 0
      }).pipe(Effect.orDie),
    byDeviceCode: (hash: string) =>
      sql<DeviceAuthorizationRow>`SELECT * FROM device_authorizations WHERE device_code_hash = ${hash}`.pipe(
        first,
        Effect.orDie
      ),
    byUserCode: (hash: string) =>
      sql<DeviceAuthorizationRow>`SELECT * FROM device_authorizations WHERE user_code_hash = ${hash}`.pipe(
        first,
        Effect.orDie
      ),
    /** Decides a pending, unexpired request; false when it was not (any more) pending. */
    decide: (id: string, now: number, decision: Decision) =>
      sql`UPDATE device_authorizations SET status = ${decision.status}, decided_by = ${decision.decidedBy},
          decided_at = ${decision.decidedAt}, organization_id = ${decision.organizationId},
          preset = ${decision.preset}, key_name = ${decision.keyName},
          key_expires_in_days = ${decision.keyExpiresInDays}
        WHERE id = ${id} AND status = 'pending' AND expires_at > ${now} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      ),
    /** Records a poll, and the longer interval a too-early poll earns. */
    polled: (id: string, now: number, intervalSeconds: number) =>
      Effect.orDie(sql`UPDATE device_authorizations SET last_polled_at = ${now}, interval_seconds = ${intervalSeconds}
        WHERE id = ${id}`),
    /** Marks an approved request as answered with `apiKeyId`; false when another poll did it first. */
    issue: (id: string, apiKeyId: string) =>
      sql`UPDATE device_authorizations SET status = 'issued', api_key_id = ${apiKeyId}
        WHERE id = ${id} AND status = 'approved' RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      ),
    /** An approval that can no longer be honoured (its approver left the organization). */
    revokeApproval: (id: string) =>
      Effect.orDie(sql`UPDATE device_authorizations SET status = 'denied' WHERE id = ${id} AND status = 'approved'`)
  }
})

export class DeviceAuthorizationsRepo extends Context.Tag("svc/identity/DeviceAuthorizationsRepo")<
  DeviceAuthorizationsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(DeviceAuthorizationsRepo, make)
}
