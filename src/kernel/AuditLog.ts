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
  /** `system`: svc itself (a timer, billing, a suspension); `actor` then says which. */
  readonly actorKind: "operator" | "user" | "system"
  /** What was done, dotted: `organization.suspend`, `billing.grant`, `device.deny`, `machine.create`. */
  readonly action: string
  readonly organizationId: string | null
  readonly reason: string | null
  readonly detail?: Record<string, unknown>
}

export interface AuditRow {
  readonly id: string
  readonly at: number
  readonly actor: string
  readonly actor_kind: "operator" | "user" | "system"
  readonly action: string
  readonly organization_id: string | null
  readonly reason: string | null
  /** JSON. */
  readonly detail: string
}

/** What `list` may be narrowed to; a null or absent member takes every row. */
export interface AuditFilter {
  readonly organizationId?: string | null
  /** The `machine_id` in the row's detail (machine lifecycle rows). */
  readonly machineId?: string | null
  readonly actor?: string | null
  /** An action, or a prefix of dotted actions (`machine`). */
  readonly action?: string | null
  /** Epoch milliseconds, inclusive. */
  readonly since?: number | null
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
    /** Oldest first; only the rows every given filter takes. */
    list: (options: AuditFilter & { readonly limit: number }) => {
      const where = [
        options.organizationId == null ? undefined : sql`organization_id = ${options.organizationId}`,
        options.machineId == null ? undefined : sql`json_extract(detail, '$.machine_id') = ${options.machineId}`,
        options.actor == null ? undefined : sql`actor = ${options.actor}`,
        // `machine` takes every `machine.*` action; `machine.stop` only that one.
        options.action == null
          ? undefined
          : sql`(action = ${options.action} OR action LIKE ${`${
            options.action.replace(/[%_\\]/g, "\\$&")
          }.%`} ESCAPE '\\')`,
        options.since == null ? undefined : sql`at >= ${options.since}`
      ].filter((clause) => clause !== undefined)
      return sql<AuditRow>`SELECT * FROM audit_log ${where.length === 0 ? sql`` : sql`WHERE ${sql.and(where)}`}
        ORDER BY at, id LIMIT ${options.limit}`.pipe(Effect.orDie)
    }
  }
})

export class AuditLog extends Context.Tag("svc/kernel/AuditLog")<AuditLog, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(AuditLog, make)
}
