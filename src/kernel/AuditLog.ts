/**
 * The audit log: operator actions and an organization's security events. `record` must run inside
 * the transaction of the action it records (the SQL client joins it), so an action and its row
 * land together or not at all, also across kill -9.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { uuidv7 } from "./domain/Ids.js"

export interface AuditEntry {
  readonly actor: string
  readonly actorKind: "operator" | "user"
  /** What was done, dotted: `organization.suspend`, `billing.grant`, `device.deny`. */
  readonly action: string
  readonly organizationId: string | null
  readonly reason: string | null
  readonly detail?: Record<string, unknown>
}

export interface AuditRow {
  readonly id: string
  readonly at: number
  readonly actor: string
  readonly actor_kind: "operator" | "user"
  readonly action: string
  readonly organization_id: string | null
  readonly reason: string | null
  /** JSON. */
  readonly detail: string
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    record: (entry: AuditEntry) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) =>
        sql`INSERT INTO audit_log ${
          sql.insert({
            id: uuidv7(),
            at,
            actor: entry.actor,
            actor_kind: entry.actorKind,
            action: entry.action,
            organization_id: entry.organizationId,
            reason: entry.reason,
            detail: JSON.stringify(entry.detail ?? {})
          })
        }`).pipe(Effect.asVoid, Effect.orDie),
    /** Oldest first; of one organization when given. */
    list: (options: { readonly organizationId: string | null; readonly limit: number }) =>
      (options.organizationId === null
        ? sql<AuditRow>`SELECT * FROM audit_log ORDER BY at, id LIMIT ${options.limit}`
        : sql<AuditRow>`SELECT * FROM audit_log WHERE organization_id = ${options.organizationId}
            ORDER BY at, id LIMIT ${options.limit}`).pipe(Effect.orDie)
  }
})

export class AuditLog extends Context.Tag("svc/kernel/AuditLog")<AuditLog, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(AuditLog, make)
}
