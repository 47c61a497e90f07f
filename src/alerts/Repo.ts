/** SQL for the alerts area: members' preferences and the alerts' outbox. */
import { Context, Effect, Layer } from "effect"
import { Prepared } from "../kernel/sql/Sqlite.js"

export interface AlertRow {
  readonly id: string
  readonly organization_id: string
  readonly user_id: string
  readonly type: string
  readonly machine_id: string
  readonly operation_id: string | null
  readonly summary: string
  readonly status: "pending" | "sent" | "dropped"
  readonly attempt_count: number
  readonly created_at: number
  readonly next_attempt_at: number
  readonly sent_at: number | null
  readonly last_error: string | null
}

/** The key alerts are coalesced by: one mail per member, type and machine per window. */
export interface AlertKey {
  readonly organization_id: string
  readonly user_id: string
  readonly type: string
  readonly machine_id: string
}

const keyWhere = "organization_id = ? AND user_id = ? AND type = ? AND machine_id = ?"
const keyParams = (key: AlertKey) => [key.organization_id, key.user_id, key.type, key.machine_id] as const

const make = Effect.gen(function*() {
  const db = yield* Prepared
  return {
    /** The member's own choices (types without a row follow their default). */
    preferences: (organizationId: string, userId: string) =>
      db.all<{ type: string; enabled: number }>(
        "SELECT type, enabled FROM notification_preferences WHERE organization_id = ? AND user_id = ?",
        organizationId,
        userId
      ),
    setPreference: (organizationId: string, userId: string, type: string, enabled: boolean, now: number) =>
      db.run(
        `INSERT INTO notification_preferences (organization_id, user_id, type, enabled, updated_at)
          VALUES (?, ?, ?, ?, ?)
          ON CONFLICT (organization_id, user_id, type) DO UPDATE SET enabled = excluded.enabled,
          updated_at = excluded.updated_at`,
        organizationId,
        userId,
        type,
        enabled ? 1 : 0,
        now
      ),
    insert: (row: AlertRow) => db.insert("alerts", row),
    /** Up to `limit` pending alerts due by `now`, oldest first. */
    due: (now: number, limit: number) =>
      db.all<AlertRow>(
        "SELECT * FROM alerts WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
        now,
        limit
      ),
    /** Every pending alert of a key, oldest first: one mail tells of them all. */
    pendingOf: (key: AlertKey) =>
      db.all<AlertRow>(
        `SELECT * FROM alerts WHERE ${keyWhere} AND status = 'pending' ORDER BY created_at, id`,
        ...keyParams(key)
      ),
    /** When the member last got a mail of this key, if ever. */
    lastSent: (key: AlertKey) =>
      Effect.map(
        db.all<{ at: number | null }>(`SELECT max(sent_at) AS at FROM alerts WHERE ${keyWhere}`, ...keyParams(key)),
        (rows) => rows[0]?.at ?? null
      ),
    /** Alert mails waiting to be sent (the mail queue `/metrics` shows). */
    pendingCount: Effect.map(
      db.all<{ n: number }>("SELECT COUNT(*) AS n FROM alerts WHERE status = 'pending'"),
      (rows) => Number(rows[0]?.n ?? 0)
    ),
    nextDue: () =>
      Effect.map(
        db.all<{ at: number | null }>("SELECT min(next_attempt_at) AS at FROM alerts WHERE status = 'pending'"),
        (rows) => rows[0]?.at ?? null
      ),
    /** Moves the key's pending alerts to `at` (the end of its window, or a retry after a failed send). */
    postpone: (ids: ReadonlyArray<string>, at: number, attempts: number, error: string | null) =>
      Effect.forEach(
        ids,
        (id) => db.updateById("alerts", id, { next_attempt_at: at, attempt_count: attempts, last_error: error }),
        {
          discard: true
        }
      ),
    settle: (ids: ReadonlyArray<string>, status: "sent" | "dropped", now: number) =>
      Effect.forEach(ids, (id) => db.updateById("alerts", id, { status, sent_at: status === "sent" ? now : null }), {
        discard: true
      })
  }
})

export class AlertsRepo extends Context.Tag("svc/alerts/AlertsRepo")<
  AlertsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(AlertsRepo, make)
}
