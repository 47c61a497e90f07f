/**
 * Billing's alerts (extensions §19) with metered billing on the TestClock: a balance that runs out
 * tells owners and billing members once (`billing_exhausted`), a trial 3 days from its end tells them
 * once (`trial_ending`); a plain member hears of neither, and with unlimited billing both types are
 * unavailable.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Option, Redacted, TestClock } from "effect"
import * as NodeCrypto from "node:crypto"
import { Alerts } from "../../src/alerts/Alerts.js"
import { Accounts } from "../../src/billing/Accounts.js"
import { AppConfig, type AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import { readOutbox } from "../../src/kernel/mail/Outbox.js"
import { Machines } from "../../src/machines/Machines.js"
import { MachinesRepo } from "../../src/runtime/MachinesRepo.js"
import { cheapPrices } from "../billing/support.js"
import { realSleep } from "../support/Machines.js"
import { newMachine, owner, services, until } from "../support/Services.js"

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

const setup = (overrides: Partial<AppConfigShape>) =>
  Effect.gen(function*() {
    const context = yield* services({ secretKeys, billing: "metered", prices: cheapPrices(), ...overrides })
    const config = Context.get(context, AppConfig)
    const outbox = readOutbox((config.mail as { dir: string }).dir)
    const sql = Context.get(context, SqlClient.SqlClient)
    const alice = yield* owner(context, "alice@example.com")
    // Bob manages billing, Carol is a plain member: only Alice and Bob hear of money.
    const bob = yield* owner(context, "bob@example.com")
    const carol = yield* owner(context, "carol@example.com")
    const now = yield* TestClock.currentTimeMillis
    for (const [who, role] of [[bob, "billing"], [carol, "member"]] as const) {
      yield* sql`INSERT INTO memberships (organization_id, user_id, role, joined_at)
        VALUES (${alice.organizationId}, ${who.userId}, ${role}, ${now})`
    }
    const mailsOf = (type: string) =>
      Effect.map(outbox, (all) =>
        all.filter((mail) =>
          mail.headers["List-Unsubscribe"]?.includes("token=") && mail.text.includes(`(${type})`)
        ))
    return { context, alice, mailsOf }
  })

describe("alerts: billing's news", () => {
  it.scoped("a balance that runs out tells owners and billing members once", () =>
    Effect.gen(function*() {
      const { alice, context, mailsOf } = yield* setup({ meterSeconds: 60 })
      const machines = Context.get(context, Machines)
      const made = yield* machines.create(alice, newMachine("spender", true))
      yield* until(
        Effect.map(
          Context.get(context, MachinesRepo).find(made.machine_id),
          (row) => Option.isSome(row) && row.value.state === "running" ? true : undefined
        ),
        30_000
      )
      // The trial's 1,000 micros at one micro a second: gone within 17 ticks of 60 s. The clock moves
      // a minute at a time until the mails come: on PostgreSQL the meter runs once it holds its
      // singleton's lock, which may come after the first minutes were moved.
      const told = yield* until(
        Effect.zipRight(
          TestClock.adjust("60 seconds"),
          Effect.map(mailsOf("billing_exhausted"), (mails) => (mails.length >= 2 ? mails : undefined))
        ),
        60_000
      )
      assert.sameMembers(told.map((mail) => mail.to), ["alice@example.com", "bob@example.com"])
      assert.include(told[0]!.subject, "balance ran out")
      assert.include(told[0]!.text, "You get at most one such e-mail every 10 minutes.")
      // More ticks while exhausted: no second notice.
      for (let tick = 0; tick < 15; tick++) yield* TestClock.adjust("60 seconds")
      yield* realSleep(300)
      assert.strictEqual((yield* mailsOf("billing_exhausted")).length, 2)
      assert.isNotNull((yield* Context.get(context, Accounts).ensure(alice.organizationId)).exhausted_since)
    }), { timeout: 120_000 })

  it.scoped("a trial 3 days from its end tells owners and billing members once", () =>
    Effect.gen(function*() {
      // Hourly ticks, and no abuse guard sampling every 30 s: eleven days on the TestClock are 264 rounds.
      const { alice, context, mailsOf } = yield* setup({
        meterSeconds: 3600,
        abuse: { scope: "off", sampleSeconds: 30, cpuPermille: 900, windowSeconds: 900 }
      })
      const account = yield* Context.get(context, Accounts).ensure(alice.organizationId)
      const now = yield* TestClock.currentTimeMillis
      const warnAt = account.trial_ends_at - 3 * 24 * 3600_000
      yield* TestClock.adjust(warnAt - now - 2 * 3600_000)
      yield* realSleep(300)
      assert.strictEqual((yield* mailsOf("trial_ending")).length, 0, "not before 3 days ahead")
      yield* TestClock.adjust("3 hours")
      const told = yield* until(
        Effect.map(mailsOf("trial_ending"), (mails) => (mails.length >= 2 ? mails : undefined)),
        30_000
      )
      assert.sameMembers(told.map((mail) => mail.to), ["alice@example.com", "bob@example.com"])
      assert.include(told[0]!.text, new Date(account.trial_ends_at).toISOString())
      yield* TestClock.adjust("1 days")
      yield* realSleep(300)
      assert.strictEqual((yield* mailsOf("trial_ending")).length, 2, "told once")
    }), { timeout: 120_000 })

  it.scoped("with unlimited billing the billing types are unavailable", () =>
    Effect.gen(function*() {
      const { alice, context } = yield* setup({ billing: "unlimited" })
      const view = yield* Context.get(context, Alerts).view(alice.organizationId, alice.userId, "alice@example.com")
      const billingTypes = view.alerts.filter((alert) => ["billing_exhausted", "trial_ending"].includes(alert.type))
      assert.deepStrictEqual(billingTypes.map((alert) => [alert.available, alert.enabled]), [[false, false], [
        false,
        false
      ]])
    }))
})
