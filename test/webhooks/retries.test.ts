/**
 * The sender's retry schedule (extensions.md §9) on the TestClock: a receiver that always answers
 * 500 gets the first attempt at once, then retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and
 * 10 h, each signed under the event's one webhook-id; then the delivery is `failed`.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Redacted, TestClock } from "effect"
import * as NodeCrypto from "node:crypto"
import { retryDelaysMillis } from "../../src/webhooks/Events.js"
import { Webhooks } from "../../src/webhooks/Webhooks.js"
import { WebhookSender } from "../../src/webhooks/Worker.js"
import { httpReceiver } from "../support/Receivers.js"
import { asleepUntil, owner, services, until } from "../support/Services.js"

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

describe("webhook retries", () => {
  it.scoped("follow the schedule on the clock, then fail", () =>
    Effect.gen(function*() {
      const context = yield* services({ secretKeys, webhookAllowPrivate: true })
      const requester = yield* owner(context, "retry@example.com")
      const receiver = yield* httpReceiver(500)
      const made = yield* Context.get(context, Webhooks).create(requester.organizationId, requester.userId, {
        name: "r",
        url: receiver.url,
        events: ["machine.created"],
        enabled: true
      })
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* sql`INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, machine_id, operation_id,
        body, status, attempt_count, created_at, next_attempt_at) VALUES (${NodeCrypto.randomUUID()},
        ${made.webhook.id}, ${"0190a000-0000-7000-8000-000000000001"}, 'machine.created', NULL, NULL,
        '{"type":"machine.created"}', 'pending', 0, 0, 0)`
      yield* Context.get(context, WebhookSender).wake
      const row = () =>
        Effect.map(
          sql<{ attempt_count: number; status: string; next_attempt_at: number | null }>`SELECT attempt_count,
            status, next_attempt_at FROM webhook_deliveries`,
          (rows) => rows[0]!
        )
      const attemptsReach = (n: number) => until(Effect.map(row(), (r) => (r.attempt_count >= n ? r : undefined)))
      yield* attemptsReach(1)
      for (const [index, wait] of retryDelaysMillis.entries()) {
        const due = (yield* row()).next_attempt_at!
        assert.strictEqual(due, (yield* TestClock.currentTimeMillis) + wait)
        yield* TestClock.adjust(wait - 1)
        // The sender has looked at the table since and sleeps until the retry's time.
        yield* asleepUntil(due)
        assert.strictEqual(receiver.received.length, index + 1, `no attempt before ${wait} ms`)
        yield* TestClock.adjust(1)
        yield* attemptsReach(index + 2)
      }
      const last = yield* until(Effect.map(row(), (r) => (r.status === "failed" ? r : undefined)))
      assert.strictEqual(last.attempt_count, 8)
      assert.strictEqual(receiver.received.length, 8)
      assert.strictEqual(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size, 1)
    }))
})
