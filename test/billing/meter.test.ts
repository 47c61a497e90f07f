/**
 * Metering and the money rules at the service, over a real SQLite file and the `process` driver,
 * with time on the TestClock: both modes, whole seconds with the fraction carried, trial → plan →
 * credit, exhaustion (machines stopped with `billing`, 402 on create, cleared by a grant), the
 * trial's restrictions, expiry and forfeit, and the ledger invariant throughout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Option, TestClock } from "effect"
import { meter } from "../../src/billing/Money.js"
import { defaultLimits } from "../../src/kernel/config/AppConfig.js"
import { failureTag, newMachine, until } from "../support/Services.js"
import { billingServices, cheapPrices, ledgerInvariant, runningMachine } from "./support.js"

const operator = { operator: "ops@example.com", reason: "goodwill" }

describe("money arithmetic", () => {
  it("meter carries the fraction: a thousand one-second ticks cost exactly what 1,000 seconds cost", () => {
    let carry = 0
    let total = 0
    for (let i = 0; i < 1000; i++) {
      const priced = meter(1, 40_000, 900, carry)
      total += priced.amount
      carry = priced.carry
    }
    const once = meter(1000, 40_000, 900, 0)
    assert.strictEqual(total, once.amount)
    assert.strictEqual(carry, once.carry)
    assert.strictEqual(once.amount, Math.floor(1000 * 40_000 * 0.9 / 3600))
  })
})

describe("billing", () => {
  it.scoped("unlimited: reads answer unlimited with zero balances, payments 501, usage recorded at list prices", () =>
    Effect.gen(function*() {
      const s = yield* billingServices({ billing: "unlimited" })
      const alice = yield* s.owner("alice@example.com")
      const view = yield* s.billing.view(alice.organizationId)
      assert.strictEqual(view.status, "unlimited")
      assert.strictEqual(view.account, null)
      assert.strictEqual(view.spendable, 0)
      assert.strictEqual(view.trial.active, false)
      assert.strictEqual(view.paymentsAvailable, false)
      assert.strictEqual(view.limits.tier, "unlimited")
      assert.strictEqual(
        yield* failureTag(s.purchases.checkout(alice.organizationId, { credit_packs: 1, end_trial: false })),
        "billing_unavailable"
      )
      assert.strictEqual(yield* failureTag(s.purchases.portal(alice.organizationId)), "billing_unavailable")

      const machine = yield* runningMachine(s, alice, "one", "large")
      yield* TestClock.adjust("10 seconds")
      yield* s.meter.run()
      const rows = yield* s.billing.usageRows(alice.organizationId, 0, Date.UTC(2100, 0), null)
      assert.strictEqual(rows.length, 1)
      assert.strictEqual(rows[0]!.machine_id, machine)
      assert.strictEqual(rows[0]!.seconds, 10)
      assert.strictEqual(rows[0]!.amount_micros, 40) // 14,400 an hour: 4 a second
      // Nothing is charged: no account, no ledger.
      assert.strictEqual((yield* s.billing.ledger(alice.organizationId, 50, null)).items.length, 0)
      // The member list's usage this month: the machines each member created, priced at list prices.
      const byMember = yield* s.billing.usageThisMonthByMember(alice.organizationId)
      assert.deepStrictEqual(byMember.get(alice.userId), { cost_micros: 40, seconds: 10 })
      assert.strictEqual(byMember.size, 1)
    }))

  it.scoped("metered: the trial grant, charges per tick with the fraction carried, the ledger adds up", () =>
    Effect.gen(function*() {
      const s = yield* billingServices({ prices: cheapPrices({ hourly_micros: { small: 1_000 } }) })
      const alice = yield* s.owner("alice@example.com")
      const view = yield* s.billing.view(alice.organizationId)
      assert.strictEqual(view.status, "trial")
      assert.strictEqual(view.account?.trial_micros, 1_000)
      assert.strictEqual(view.trial.active, true)
      assert.strictEqual(view.trial.remaining_seconds, 14 * 86_400)
      const machine = yield* runningMachine(s, alice, "one")
      // 7 ticks of 7 seconds at 1,000 micros an hour: 49 s cost 13.6 micros, charged whole as they accrue.
      for (let i = 0; i < 7; i++) {
        yield* TestClock.adjust("7 seconds")
        yield* s.meter.run()
      }
      const usage = yield* s.billing.usageRows(alice.organizationId, 0, Date.UTC(2100, 0), machine)
      assert.strictEqual(usage[0]!.seconds, 49)
      assert.strictEqual(usage[0]!.amount_micros, Math.floor(49 * 1000 / 3600))
      const invariant = yield* ledgerInvariant(s, alice.organizationId)
      assert.deepStrictEqual(invariant.rows, invariant.balances)
      assert.strictEqual(invariant.balances.trial, 1_000 - Math.floor(49 * 1000 / 3600))
      const ledger = yield* s.billing.ledger(alice.organizationId, 100, null)
      assert.strictEqual(ledger.items[ledger.items.length - 1]!.kind, "trial_grant")
      assert.isTrue(ledger.items.slice(0, -1).every((row) => row.kind === "usage" && row.machine_id === machine))
      // A stop meters up to the stop, once.
      yield* TestClock.adjust("3 seconds")
      yield* s.machines.change(alice, machine, "stop", { force: false, stop_reason: "api" })
      yield* until(Effect.map(s.repo.find(machine), (row) => Option.getOrThrow(row).state === "stopped" || undefined))
      yield* s.meter.run()
      yield* TestClock.adjust("1 hour")
      yield* s.meter.run()
      const after = yield* s.billing.usageRows(alice.organizationId, 0, Date.UTC(2100, 0), machine)
      assert.strictEqual(after[0]!.seconds, 52)
    }))

  it.scoped("the meter's span closes at the hour: rows per hour, every second charged once", () =>
    Effect.gen(function*() {
      const s = yield* billingServices({ prices: cheapPrices({ trial: { total_micros: 1_000_000 } }) })
      const alice = yield* s.owner("alice@example.com")
      const machine = yield* runningMachine(s, alice, "one") // one micro a second
      const startedAt = Option.getOrThrow(yield* s.repo.find(machine)).started_at!
      // 70 minutes past the start, over an hour's end, metered every minute (as the worker does; run
      // here too, since on PostgreSQL the worker's tick may still be waiting on the database when the
      // clock moves on).
      for (let minute = 0; minute < 70; minute++) {
        yield* TestClock.adjust("1 minute")
        yield* s.meter.run()
      }
      const now = yield* Clock.currentTimeMillis
      const hour = 3_600_000
      const firstHour = startedAt - (startedAt % hour)
      const inHour = (start: number) =>
        Effect.map(
          s.billing.usageRows(alice.organizationId, start, start + hour, machine),
          (rows) => rows[0]?.seconds ?? 0
        )
      const first = yield* inHour(firstHour)
      const second = yield* inHour(firstHour + hour)
      assert.isAbove(first, 0)
      assert.isAbove(second, 0)
      assert.strictEqual(first + second, Math.floor((now - startedAt) / 1000))
      // The first hour's row was closed into billing_usage; the meter holds the second hour's span,
      // which readers see up to the organization's mark.
      const closed = yield* s.sql<{ hour_start: number; seconds: number }>`SELECT hour_start, seconds
        FROM billing_usage WHERE machine_id = ${machine}`
      assert.deepStrictEqual(closed.map((row) => [Number(row.hour_start), Number(row.seconds)]), [[firstHour, first]])
      const open = yield* s.sql<{ hour_start: number; opened_at: number }>`SELECT hour_start, opened_at
        FROM billing_meters WHERE machine_id = ${machine} AND is_open = 1`
      assert.deepStrictEqual(open.map((row) => [Number(row.hour_start), Number(row.opened_at)]), [[
        firstHour + hour,
        now - second * 1000
      ]])
      // Charged exactly what the usage rows say, and the ledger adds up.
      const usage = yield* s.billing.usageRows(alice.organizationId, 0, Date.UTC(2100, 0), machine)
      const invariant = yield* ledgerInvariant(s, alice.organizationId)
      assert.deepStrictEqual(invariant.rows, invariant.balances)
      assert.strictEqual(1_000_000 - invariant.balances.trial, usage[0]!.amount_micros)
      assert.strictEqual(usage[0]!.amount_micros, first + second)
    }))

  it.scoped("exhaustion stops the machines with billing, refuses create and start with 402, a grant clears it", () =>
    Effect.gen(function*() {
      const s = yield* billingServices({ prices: cheapPrices({ trial: { total_micros: 30 } }) })
      const alice = yield* s.owner("alice@example.com")
      const machine = yield* runningMachine(s, alice, "one") // one micro a second
      yield* TestClock.adjust("20 seconds")
      yield* s.meter.run()
      assert.strictEqual((yield* s.billing.view(alice.organizationId)).status, "trial")
      // The worker's tick (every 60 s on the TestClock) finds the trial used up and stops the machine.
      yield* TestClock.adjust("40 seconds")
      const stopped = yield* until(Effect.map(s.repo.find(machine), (row) => {
        const found = Option.getOrThrow(row)
        return found.state === "stopped" ? found : undefined
      }))
      assert.strictEqual(stopped.last_stop_reason, "billing")
      const view = yield* s.billing.view(alice.organizationId)
      assert.strictEqual(view.status, "exhausted")
      assert.isNotNull(view.account?.exhausted_since)
      assert.strictEqual(view.limits.status, "exhausted")
      // The last seconds were owed past the trial: they are on credit, below zero, never lost.
      const invariant = yield* ledgerInvariant(s, alice.organizationId)
      assert.deepStrictEqual(invariant.rows, invariant.balances)
      assert.strictEqual(invariant.balances.trial, 0)
      assert.isTrue(invariant.balances.credit < 0)

      assert.strictEqual(yield* failureTag(s.machines.create(alice, newMachine("two", false))), "balance_exhausted")
      assert.strictEqual(yield* failureTag(s.machines.change(alice, machine, "start", {})), "balance_exhausted")

      yield* s.billing.grantCredit(alice.organizationId, 1_000, operator)
      const cleared = yield* s.billing.view(alice.organizationId)
      assert.strictEqual(cleared.status, "trial")
      assert.strictEqual(cleared.account?.exhausted_since, null)
      // Machines stay stopped; starting one is allowed again.
      assert.strictEqual(stopped.state, "stopped")
      assert.strictEqual(yield* failureTag(s.machines.change(alice, machine, "start", {})), "succeeded")
      const audit = yield* s.sql<
        { action: string; actor: string }
      >`SELECT action, actor FROM audit_log WHERE action LIKE 'billing.%'`
      // The machines' own lifecycle rows (create, the billing stop) are the machine audit's business.
      assert.deepStrictEqual(audit.map((row) => row.action), ["billing.credit_grant"])
    }))

  it.scoped("trial rules: small and default only, at most max_hourly_micros running, two machines", () =>
    Effect.gen(function*() {
      const s = yield* billingServices({
        prices: cheapPrices({ trial: { total_micros: 1_000_000, max_hourly_micros: 10_800 } }),
        limits: { ...defaultLimits, trial: { concurrent_machines: 5, starts_per_hour: 100 } }
      })
      const alice = yield* s.owner("alice@example.com")
      const large = { ...newMachine("big", false), size: "large" as const }
      assert.strictEqual(yield* failureTag(s.machines.create(alice, large)), "trial_restricted")
      yield* s.machines.create(alice, { ...newMachine("d", true), size: "default" }) // 7,200 an hour
      // Another default would make 14,400 an hour: over the trial's 10,800.
      assert.strictEqual(
        yield* failureTag(s.machines.create(alice, { ...newMachine("d2", true), size: "default" })),
        "trial_restricted"
      )
      assert.strictEqual(yield* failureTag(s.machines.create(alice, newMachine("s", true))), "succeeded")
      // Two machines at once on the trial, whatever SVC_LIMITS allows.
      assert.strictEqual((yield* s.billing.view(alice.organizationId)).limits.concurrent_machines.limit, 2)
      // A stopped machine may be created (no boot, nothing runs).
      assert.strictEqual(
        yield* failureTag(s.machines.create(alice, { ...newMachine("d3", false), size: "default" })),
        "succeeded"
      )
      // After the first payment the trial rules stop: a large machine is allowed.
      yield* s.sql`UPDATE billing_accounts SET paid_at = 1 WHERE organization_id = ${alice.organizationId}`
      assert.strictEqual(yield* failureTag(s.machines.create(alice, large)), "succeeded")
    }))

  it.scoped("trial expiry on the TestClock forfeits the remainder; trial/end forfeits once; a grant restarts it", () =>
    Effect.gen(function*() {
      // A trial of one hour (SVC_PRICES takes fractional days), so the TestClock runs 60 ticks, not 20,160.
      const s = yield* billingServices({ prices: cheapPrices({ trial: { days: 1 / 24 } }) })
      const alice = yield* s.owner("alice@example.com")
      const bob = yield* s.owner("bob@example.com")
      yield* s.billing.view(alice.organizationId)
      yield* s.billing.view(bob.organizationId)
      // Bob ends his trial himself; a second end changes nothing.
      yield* s.billing.endTrial(bob.organizationId)
      yield* s.billing.endTrial(bob.organizationId)
      const bobs = yield* s.billing.ledger(bob.organizationId, 50, null)
      assert.deepStrictEqual(bobs.items.map((row) => [row.kind, row.amount_micros]), [
        ["trial_forfeit", -1_000],
        ["trial_grant", 1_000]
      ])
      assert.strictEqual((yield* s.billing.view(bob.organizationId)).status, "exhausted")

      // Alice's trial expires after its hour: the worker's tick forfeits it.
      yield* TestClock.adjust("1 hour")
      // A tick still busy (real I/O) when the adjust ends sleeps past it: each look moves the clock a
      // minute more, so a later tick comes however slow the host.
      const forfeited = yield* until(
        Effect.zipRight(
          TestClock.adjust("1 minute"),
          Effect.map(
            s.billing.ledger(alice.organizationId, 50, null),
            (page) => page.items[0]?.kind === "trial_forfeit" ? page.items[0] : undefined
          )
        ),
        60_000
      )
      assert.strictEqual(forfeited.amount_micros, -1_000)
      const view = yield* s.billing.view(alice.organizationId)
      assert.strictEqual(view.trial.active, false)
      assert.strictEqual(view.status, "exhausted")

      yield* s.billing.grantTrial(alice.organizationId, { trial_micros: 500, trial_days: 3 }, operator)
      const restarted = yield* s.billing.view(alice.organizationId)
      assert.strictEqual(restarted.status, "trial")
      assert.strictEqual(restarted.trial.remaining_micros, 500)
      assert.strictEqual(restarted.trial.remaining_seconds, 3 * 86_400)
      const invariant = yield* ledgerInvariant(s, alice.organizationId)
      assert.deepStrictEqual(invariant.rows, invariant.balances)
    }))
})
