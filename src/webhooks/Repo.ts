/** SQL for the webhooks area's tables: endpoints and their deliveries (the outbox). */
import { Context, Effect, Layer, type Option } from "effect"
import { Prepared } from "../kernel/sql/Sqlite.js"

export interface WebhookRow {
  readonly id: string
  readonly organization_id: string
  readonly created_by: string
  readonly name: string
  readonly url: string
  readonly enabled: number
  readonly events: string
  readonly sealed_secret: string
  readonly created_at: number
  readonly updated_at: number
  readonly secret_rotated_at: number | null
}

export interface DeliveryRow {
  readonly id: string
  readonly webhook_id: string
  readonly event_id: string
  readonly event_type: string
  readonly machine_id: string | null
  readonly operation_id: string | null
  readonly body: string
  readonly status: "pending" | "succeeded" | "failed"
  readonly attempt_count: number
  readonly created_at: number
  readonly delivered_at: number | null
  readonly last_attempt_at: number | null
  readonly next_attempt_at: number | null
  readonly last_status_code: number | null
  readonly last_error: string | null
}

/** A due delivery with what sending it needs from its endpoint, read at the attempt's start. */
export interface DueDelivery extends DeliveryRow {
  readonly url: string
  readonly sealed_secret: string
}

export type WebhookPatch = Partial<
  Pick<WebhookRow, "name" | "url" | "enabled" | "events" | "sealed_secret" | "updated_at" | "secret_rotated_at">
>

export type AttemptPatch = Pick<
  DeliveryRow,
  | "status"
  | "attempt_count"
  | "delivered_at"
  | "last_attempt_at"
  | "next_attempt_at"
  | "last_status_code"
  | "last_error"
>

const make = Effect.gen(function*() {
  const db = yield* Prepared
  return {
    /** Deliveries not yet succeeded or given up (for /metrics). */
    pendingCount: Effect.map(
      db.all<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'"),
      (rows) => Number(rows[0]?.n ?? 0)
    ),
    insert: (row: WebhookRow) => db.insert("webhooks", row),
    find: (organizationId: string, id: string): Effect.Effect<Option.Option<WebhookRow>> =>
      db.first<WebhookRow>("SELECT * FROM webhooks WHERE id = ? AND organization_id = ?", id, organizationId),
    count: (organizationId: string) =>
      Effect.map(
        db.all<{ n: number }>("SELECT count(*) AS n FROM webhooks WHERE organization_id = ?", organizationId),
        (rows) => rows[0]?.n ?? 0
      ),
    list: (organizationId: string, after: string | null, limit: number) =>
      db.all<WebhookRow>(
        "SELECT * FROM webhooks WHERE organization_id = ? AND id > ? ORDER BY id LIMIT ?",
        organizationId,
        after ?? "",
        limit
      ),
    update: (id: string, patch: WebhookPatch) => db.updateById("webhooks", id, patch),
    remove: (id: string) =>
      Effect.zipRight(
        db.run("DELETE FROM webhook_deliveries WHERE webhook_id = ?", id),
        db.run("DELETE FROM webhooks WHERE id = ?", id)
      ),
    /** The endpoints of an organization that follow events (enabled or not: a disabled one queues). */
    following: (organizationId: string) =>
      db.all<{ id: string; events: string }>(
        "SELECT id, events FROM webhooks WHERE organization_id = ?",
        organizationId
      ),
    insertDelivery: (row: DeliveryRow) => db.insert("webhook_deliveries", row),
    /** Newest first. */
    deliveries: (webhookId: string, before: string | null, limit: number) =>
      before === null
        ? db.all<DeliveryRow>(
          "SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?",
          webhookId,
          limit
        )
        : db.all<DeliveryRow>(
          "SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
          webhookId,
          before,
          limit
        ),
    /** The enabled endpoints that have a pending delivery due by `now`. */
    endpointsDue: (now: number) =>
      db.all<{ id: string }>(
        `SELECT w.id FROM webhooks w WHERE w.enabled = 1 AND EXISTS (SELECT 1 FROM webhook_deliveries d
          WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= ?)`,
        now
      ),
    /** Up to `limit` pending deliveries of one enabled endpoint due by `now`, oldest due first. */
    due: (webhookId: string, now: number, limit: number) =>
      db.all<DueDelivery>(
        `SELECT d.*, w.url, w.sealed_secret FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.webhook_id = ? AND w.enabled = 1 AND d.status = 'pending' AND d.next_attempt_at <= ?
          ORDER BY d.next_attempt_at, d.id LIMIT ?`,
        webhookId,
        now,
        limit
      ),
    /**
     * When the next pending delivery of an enabled endpoint is due, if any: one index seek per
     * enabled endpoint (a min over every pending row made each wake of the sender cost a scan).
     */
    nextDue: () =>
      Effect.map(
        db.all<{ at: number | null }>(
          `SELECT min((SELECT min(d.next_attempt_at) FROM webhook_deliveries d
            WHERE d.webhook_id = w.id AND d.status = 'pending')) AS at FROM webhooks w WHERE w.enabled = 1`
        ),
        (rows) => rows[0]?.at ?? null
      ),
    /** Records an attempt's outcome, unless the delivery is gone (its endpoint was deleted). */
    attempted: (id: string, patch: AttemptPatch) => db.updateById("webhook_deliveries", id, patch)
  }
})

export class WebhooksRepo extends Context.Tag("svc/webhooks/WebhooksRepo")<
  WebhooksRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(WebhooksRepo, make)
}
