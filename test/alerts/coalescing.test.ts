/**
 * The alert sender on the TestClock (no HTTP): one e-mail per member, type and machine per 10
 * minutes, what arrives inside the window going out together at its end; another machine is not
 * held back; unsubscribe tokens do not expire; and the recipients of §19's types.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Option, Redacted, TestClock, TestContext } from "effect"
import * as NodeCrypto from "node:crypto"
import { Alerts } from "../../src/alerts/Alerts.js"
import { coalesceMillis } from "../../src/alerts/Types.js"
import { makeUnsubscribeTokens } from "../../src/alerts/UnsubscribeTokens.js"
import type { AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import { AppConfig } from "../../src/kernel/config/AppConfig.js"
import { SecretBox } from "../../src/kernel/crypto/SecretBox.js"
import { readOutbox } from "../../src/kernel/mail/Outbox.js"
import type { Requester } from "../../src/kernel/sql/Idempotency.js"
import { Machines } from "../../src/machines/Machines.js"
import { Operations } from "../../src/operations/Operations.js"
import { OperationsRepo } from "../../src/runtime/OperationsRepo.js"
import { asleepUntil, newMachine, owner, services, until } from "../support/Services.js"
import { smtpServerRefusing } from "../support/Smtp.js"

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

const setup = Effect.gen(function*() {
  const context = yield* services({ secretKeys })
  const machines = Context.get(context, Machines)
  const operations = Context.get(context, OperationsRepo)
  const config: AppConfigShape = Context.get(context, AppConfig)
  const outbox = readOutbox((config.mail as { dir: string }).dir)
  const alice = yield* owner(context, "alice@example.com")
  const settled = (operationId: string) =>
    until(
      Effect.map(operations.find(operationId), (row) =>
        Option.isSome(row) && ["succeeded", "failed"].includes(row.value.status) ? row.value : undefined),
      30_000
    )
  /** A running machine of `who`. */
  const running = (who: Requester, name: string) =>
    Effect.gen(function*() {
      const made = yield* machines.create(who, newMachine(name, true))
      assert.strictEqual((yield* settled(made.operation_id)).status, "succeeded")
      return made.machine_id
    })
  /** A read of a folder: fails with not_a_file. */
  const fail = (who: Requester, machineId: string) =>
    Effect.gen(function*() {
      const accepted = yield* machines.change(who, machineId, "read_file", {
        ranges: [{ path: "/", offset: 0, size: 1024 }]
      })
      const row = yield* settled(accepted.operation_id)
      assert.strictEqual(row.status, "failed")
      return row.id
    })
  const mails = (n: number) => until(Effect.map(outbox, (all) => (all.length >= n ? all : undefined)), 30_000)
  const sql = Context.get(context, SqlClient.SqlClient)
  /** The sender's idle signal: no alert is left to send (an e-mail is written before its alerts are marked). */
  const drained = until(
    Effect.map(
      sql<{ n: number }>`SELECT count(*) AS n FROM alerts WHERE status = 'pending'`,
      ([row]) => row!.n === 0 || undefined
    )
  )
  return { context, machines, alice, running, fail, outbox, mails, drained }
})

describe("alerts: coalescing and tokens", () => {
  it.scoped(
    "one e-mail per member, type and machine per 10 minutes; the rest at the window's end",
    () =>
      Effect.gen(function*() {
        const { alice, drained, fail, mails, outbox, running } = yield* setup
        const machine = yield* running(alice, "busy")
        const first = yield* fail(alice, machine)
        const [mail] = yield* mails(1)
        assert.include(mail!.text, first)
        assert.strictEqual(mail!.headers["List-Unsubscribe-Post"], "List-Unsubscribe=One-Click")

        // Two more failures inside the window: no e-mail yet.
        const second = yield* fail(alice, machine)
        const third = yield* fail(alice, machine)
        // Another machine is its own key: mailed at once.
        const other = yield* running(alice, "other")
        const elsewhere = yield* fail(alice, other)
        const two = yield* mails(2)
        assert.include(two[1]!.text, elsewhere)
        // The sender waits for the window's end (the clock has not moved since the first e-mail).
        const windowEnd = (yield* TestClock.currentTimeMillis) + coalesceMillis
        yield* asleepUntil(windowEnd)
        assert.strictEqual((yield* outbox).length, 2)

        yield* TestClock.adjust(coalesceMillis - 1)
        yield* asleepUntil(windowEnd)
        assert.strictEqual((yield* outbox).length, 2, "nothing before the window ends")
        yield* TestClock.adjust(1)
        const three = yield* mails(3)
        assert.include(three[2]!.text, second)
        assert.include(three[2]!.text, third)
        assert.include(three[2]!.subject, "(2 times)")
        assert.notInclude(three[2]!.text, first)
        yield* drained
        assert.strictEqual((yield* outbox).length, 3)
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "an unsubscribe token does not expire, names one type, and an altered one is refused",
    () =>
      Effect.gen(function*() {
        const { alice, context, fail, mails, running } = yield* setup
        const alerts = Context.get(context, Alerts)
        yield* fail(alice, yield* running(alice, "m"))
        const [mail] = yield* mails(1)
        const token = decodeURIComponent(/token=([^>]+)>/.exec(mail!.headers["List-Unsubscribe"]!)![1]!)
        // Three years on (a clock of its own: the service's timers need not run through them).
        const later = yield* Effect.gen(function*() {
          const tokens = yield* makeUnsubscribeTokens
          yield* TestClock.adjust(3 * 365 * 24 * 3_600_000)
          return yield* tokens.read(token)
        }).pipe(
          Effect.provide(SecretBox.layer),
          Effect.provide(TestContext.TestContext),
          Effect.provideService(AppConfig, Context.get(context, AppConfig))
        )
        assert.deepStrictEqual(Option.getOrThrow(later), {
          organizationId: alice.organizationId,
          userId: alice.userId,
          type: "operation_failed"
        })
        const done = yield* alerts.unsubscribe(token)
        assert.deepStrictEqual(done, {
          organization_id: alice.organizationId,
          type: "operation_failed",
          enabled: false
        })
        const view = yield* alerts.view(alice.organizationId, alice.userId, "alice@example.com")
        assert.deepStrictEqual(
          view.alerts.filter((a) => !a.enabled && a.available).map((a) => a.type),
          ["operation_failed", "auto_stop"]
        )
        // Another type in the payload with this signature, or a flipped signature: refused.
        const [payload, mac] = token.split(".")
        const swapped = Buffer.from(
          Buffer.from(payload!, "base64url").toString().replace("operation_failed", "abuse_stop")
        ).toString("base64url")
        for (const bad of [`${swapped}.${mac}`, `${payload}.${mac!.slice(1)}A`, `${payload}`, "", "x.y.z"]) {
          const refused = yield* Effect.flip(alerts.unsubscribe(bad))
          assert.strictEqual(refused._tag, "invalid_token")
        }
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "recipients: the requester gets operation_failed, not the creator; a member who left gets nothing; abuse stops tell creator and owners",
    () =>
      Effect.gen(function*() {
        const { alice, context, drained, fail, mails, outbox, running } = yield* setup
        const sql = Context.get(context, SqlClient.SqlClient)
        // Bob joins Alice's organization and breaks her machine: he is told, she is not.
        const bob = yield* owner(context, "bob@example.com")
        const now = Date.now()
        yield* sql`INSERT INTO memberships (organization_id, user_id, role, joined_at)
        VALUES (${alice.organizationId}, ${bob.userId}, 'member', ${now})`
        const bobInAlice = { ...alice, userId: bob.userId }
        const machine = yield* running(alice, "shared")
        const failed = yield* fail(bobInAlice, machine)
        const [mail] = yield* mails(1)
        assert.strictEqual(mail!.to, "bob@example.com")
        assert.include(mail!.text, failed)
        // Bob leaves; an operation he asked for before fails afterwards: nobody is written to.
        yield* sql`DELETE FROM memberships WHERE organization_id = ${alice.organizationId} AND user_id = ${bob.userId}`
        yield* fail(bobInAlice, machine)
        assert.strictEqual((yield* sql<{ n: number }>`SELECT count(*) AS n FROM alerts`)[0]!.n, 1)
        const mine = yield* fail(alice, machine)
        const all = yield* mails(2)
        assert.deepStrictEqual(all.map((m) => m.to), ["bob@example.com", "alice@example.com"])
        assert.include(all[1]!.text, mine)
        yield* drained
        assert.strictEqual((yield* outbox).length, 2)

        // The abuse guard stops Bob's machine: its creator and the owners are told (Bob rejoined).
        yield* sql`INSERT INTO memberships (organization_id, user_id, role, joined_at)
          VALUES (${alice.organizationId}, ${bob.userId}, 'member', ${now})`
        const machines = Context.get(context, Machines)
        yield* machines.change(alice, machine, "stop", { force: false, stop_reason: "api" })
        yield* running(bobInAlice, "bobs")
        assert.strictEqual(yield* machines.stopAll(alice.organizationId, "abuse"), 1)
        const abuse = (yield* mails(4)).slice(2)
        assert.deepStrictEqual(abuse.map((m) => m.to).sort(), ["alice@example.com", "bob@example.com"])
        assert.isTrue(abuse.every((m) => m.text.includes("abuse guard") && m.text.includes("bobs")))
      }),
    { timeout: 120_000 }
  )
  it.scoped(
    "auto_stop is off by default; turned on, the creator hears of a timer's stop",
    () =>
      Effect.gen(function*() {
        const { alice, context, drained, machines, mails, outbox } = yield* setup
        const alerts = Context.get(context, Alerts)
        const operations = Context.get(context, OperationsRepo)
        const stopped = (machineId: string) =>
          until(
            Effect.map(machines.find(alice.organizationId, machineId), (m) => m.state === "stopped" ? m : undefined),
            30_000
          )
        const timed = (name: string) =>
          Effect.gen(function*() {
            const made = yield* machines.create(alice, { ...newMachine(name, true), auto_stop_seconds: 60 })
            yield* until(
              Effect.map(
                operations.find(made.operation_id),
                (row) => Option.isSome(row) && row.value.status === "succeeded" ? true : undefined
              ),
              30_000
            )
            // The timers' fiber has armed this machine's minute: only then does moving the clock stop it
            // (on PostgreSQL the arming may come after the operation reads as succeeded).
            yield* asleepUntil((yield* TestClock.currentTimeMillis) + 60_000)
            return made.machine_id
          })
        // Off by default: the timer's stop is not mailed.
        const quiet = yield* timed("quiet")
        yield* TestClock.adjust("61 seconds")
        yield* stopped(quiet)
        yield* drained
        assert.strictEqual((yield* outbox).length, 0)
        // On: it is.
        yield* alerts.update(alice.organizationId, alice.userId, "alice@example.com", { auto_stop: true })
        const loud = yield* timed("loud")
        yield* TestClock.adjust("61 seconds")
        yield* stopped(loud)
        const [mail] = yield* mails(1)
        assert.strictEqual(mail!.to, "alice@example.com")
        assert.include(mail!.text, "\"loud\" was stopped by its auto-stop timer")
        assert.include(mail!.headers["List-Unsubscribe"]!, "/v1/notifications/unsubscribe?token=")
      }),
    { timeout: 120_000 }
  )
  it.scoped(
    "a mail server that refuses is retried after a minute; the alert is mailed once it takes it",
    () =>
      Effect.gen(function*() {
        const smtp = yield* smtpServerRefusing(1)
        const context = yield* services({ secretKeys, mail: { kind: "smtp", url: Redacted.make(smtp.url) } })
        const machines = Context.get(context, Machines)
        const operations = Context.get(context, OperationsRepo)
        const sql = Context.get(context, SqlClient.SqlClient)
        const alice = yield* owner(context, "retry@example.com")
        const settledRow = (id: string) =>
          until(
            Effect.map(
              operations.find(id),
              (row) => Option.isSome(row) && ["succeeded", "failed"].includes(row.value.status) ? row.value : undefined
            ),
            30_000
          )
        const made = yield* machines.create(alice, newMachine("m", true))
        yield* settledRow(made.operation_id)
        const read = yield* machines.change(alice, made.machine_id, "read_file", {
          ranges: [{ path: "/", offset: 0, size: 1024 }]
        })
        assert.strictEqual((yield* settledRow(read.operation_id)).status, "failed")
        const row = () =>
          Effect.map(
            sql<{ attempt_count: number; status: string; last_error: string | null }>`
        SELECT attempt_count, status, last_error FROM alerts`,
            (rows) => rows[0]
          )
        const refused = yield* until(
          Effect.map(row(), (r) => (r !== undefined && r.attempt_count === 1 ? r : undefined))
        )
        assert.strictEqual(refused.status, "pending")
        assert.include(refused.last_error, "451")
        const retryAt = (yield* TestClock.currentTimeMillis) + 60_000
        yield* TestClock.adjust(59_000)
        yield* asleepUntil(retryAt)
        assert.strictEqual(smtp.received.length, 0, "not before its minute")
        yield* TestClock.adjust(1_000)
        yield* until(Effect.sync(() => smtp.received[0]))
        assert.include(smtp.received[0]!.data.replace(/=\r?\n/g, ""), read.operation_id)
        assert.strictEqual(
          (yield* until(Effect.map(row(), (r) => (r?.status === "sent" ? r : undefined)))).status,
          "sent"
        )
        assert.strictEqual(smtp.refused(), 1)
      }),
    { timeout: 120_000 }
  )
  it.scoped("a cancelled operation is not news: no alert", () =>
    Effect.gen(function*() {
      const { alice, context, drained, fail, machines, mails, outbox, running } = yield* setup
      const machine = yield* running(alice, "held")
      // A long exec holds the machine; the read queued behind it is cancelled while pending.
      yield* machines.change(alice, machine, "exec", { shell: "sleep 2" })
      const queued = yield* machines.change(alice, machine, "read_file", {
        ranges: [{ path: "/", offset: 0, size: 1024 }]
      })
      yield* Context.get(context, Operations).cancel(alice.organizationId, queued.operation_id)
      const real = yield* fail(alice, machine)
      const [mail] = yield* mails(1)
      assert.include(mail!.text, real)
      assert.notInclude(mail!.text, queued.operation_id)
      yield* drained
      assert.strictEqual((yield* outbox).length, 1)
      const cancelled = Option.getOrThrow(yield* Context.get(context, OperationsRepo).find(queued.operation_id))
      assert.strictEqual(cancelled.error_code, "cancelled")
    }), { timeout: 120_000 })
})
