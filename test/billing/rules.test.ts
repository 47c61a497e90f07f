/**
 * The time rules the billing worker applies on its tick, driven by the TestClock: automatic refills
 * (one off-session charge at a time through the real `stripe` client, credit added by its event,
 * three failures in a row turn it off) and a cancelled plan's period end. Plus the trial's card check.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { asleepUntil, failureTag, newMachine, until } from "../support/Services.js"
import { startStripeServer, stripeSettings } from "../support/StripeServer.js"
import { billingServices, ledgerInvariant } from "./support.js"

const withStripe = (stripe: Effect.Effect.Success<typeof startStripeServer>, extra = {}) => ({
  stripe: stripeSettings(stripe),
  payments: Option.some("stripe" as const),
  ...extra
})

describe("billing time rules", () => {
  it.scoped("auto-refill: below the threshold one charge starts; its success adds credit; three failures turn it off", () =>
    Effect.gen(function*() {
      const stripe = yield* startStripeServer
      const s = yield* billingServices(withStripe(stripe))
      const alice = yield* s.owner("alice@example.com")
      const org = alice.organizationId
      yield* s.billing.view(org)
      const customer = yield* s.purchases.cardCheck(org).pipe(Effect.zipRight(s.accounts.ensure(org)))
      stripe.customers.get(customer.customer_id!).invoice_settings.default_payment_method = "pm_card_visa"
      yield* s.purchases.setAutoRefill(org, {
        credit_packs: 1,
        enabled: true,
        monthly_cap_micros: 40_000_000,
        threshold_micros: 1_000_000
      })
      const charges = () => stripe.requests.filter((r) => r.path === "/v1/payment_intents")
      // The next tick (60 s on the TestClock) finds credit 0 below the threshold: one charge.
      yield* nextTick
      yield* until(Effect.sync(() => charges().length === 1 || undefined))
      const charge = charges()[0]!
      assert.deepStrictEqual(charge.body.metadata, { organization_id: org, purpose: "refill", credit_packs: "1" })
      assert.strictEqual(charge.body.off_session, "true")
      assert.strictEqual(charge.body.payment_method, "pm_card_visa")
      assert.strictEqual(charge.body.amount, "2000")
      // While it is pending, the next ticks start no other.
      yield* nextTick
      yield* nextTick
      yield* ticked
      assert.strictEqual(charges().length, 1)
      const succeeded = stripe.sign("payment_intent.succeeded", {
        id: "pi_1",
        object: "payment_intent",
        metadata: charge.body.metadata
      })
      yield* s.purchases.receive(succeeded.payload, succeeded.header)
      const refilled = yield* s.purchases.autoRefill(org)
      assert.strictEqual(refilled.charged_this_month_micros, 20_000_000)
      assert.strictEqual(refilled.last_charge?.status, "succeeded")
      assert.strictEqual((yield* s.accounts.ensure(org)).credit_micros, 20_000_000)

      // Raise the threshold over the balance: each refill fails at the provider; the third turns it off.
      yield* s.purchases.setAutoRefill(org, {
        credit_packs: 1,
        enabled: true,
        monthly_cap_micros: 200_000_000,
        threshold_micros: 100_000_000
      })
      for (let attempt = 1; attempt <= 3; attempt++) {
        yield* nextTick
        yield* until(Effect.sync(() => charges().length === 1 + attempt || undefined))
        const failed = stripe.sign("payment_intent.payment_failed", {
          id: `pi_failed_${attempt}`,
          object: "payment_intent",
          metadata: charges()[attempt]!.body.metadata,
          last_payment_error: { code: "card_declined" }
        })
        yield* s.purchases.receive(failed.payload, failed.header)
      }
      const off = yield* s.purchases.autoRefill(org)
      assert.strictEqual(off.enabled, false)
      assert.strictEqual(off.disabled_reason, "payment_failed")
      assert.strictEqual(off.consecutive_failures, 3)
      assert.strictEqual(off.last_charge?.failure_code, "card_declined")
      yield* nextTick
      yield* ticked
      assert.strictEqual(charges().length, 4)
      const invariant = yield* ledgerInvariant(s, org)
      assert.deepStrictEqual(invariant.rows, invariant.balances)
    }))

  it.scoped("a plan cancelled at period end ends at period_end on the TestClock; its allowance expires", () =>
    Effect.gen(function*() {
      const stripe = yield* startStripeServer
      const s = yield* billingServices(withStripe(stripe))
      const alice = yield* s.owner("alice@example.com")
      const org = alice.organizationId
      yield* s.billing.view(org)
      const start = Math.floor((yield* TestClockNow) / 1000)
      const paid = stripe.sign("invoice.paid", {
        id: "in_1",
        object: "invoice",
        customer: "cus_x",
        parent: {
          subscription_details: { subscription: "sub_1", metadata: { organization_id: org, plan: "starter" } }
        },
        lines: { data: [{ period: { start, end: start + 3600 } }] }
      })
      yield* s.purchases.receive(paid.payload, paid.header)
      assert.strictEqual((yield* s.billing.view(org)).plan.tier, "starter")
      const cancel = stripe.sign("customer.subscription.updated", {
        id: "sub_1",
        object: "subscription",
        status: "active",
        cancel_at_period_end: true,
        metadata: { organization_id: org }
      })
      yield* s.purchases.receive(cancel.payload, cancel.header)
      assert.strictEqual((yield* s.billing.view(org)).plan.cancel_at_period_end, true)
      yield* TestClock.adjust("59 minutes")
      yield* ticked
      assert.strictEqual((yield* s.billing.view(org)).plan.active, true)
      yield* TestClock.adjust("2 minutes")
      yield* until(Effect.map(s.billing.view(org), (view) => !view.plan.active || undefined))
      const ledger = yield* s.billing.ledger(org, 10, null)
      assert.strictEqual(ledger.items[0]!.kind, "plan_expiry")
      assert.strictEqual(ledger.items[0]!.amount_micros, -20_000_000)
      assert.strictEqual((yield* s.accounts.ensure(org)).plan_micros, 0)
    }))

  it.scoped("card check: with SVC_TRIAL_CARD_CHECK, a trial boots nothing until a card is verified (402)", () =>
    Effect.gen(function*() {
      const stripe = yield* startStripeServer
      const s = yield* billingServices(withStripe(stripe, { trialCardCheck: true }))
      const alice = yield* s.owner("alice@example.com")
      const org = alice.organizationId
      assert.strictEqual((yield* s.billing.view(org)).cardRequired, true)
      assert.strictEqual(
        yield* failureTag(s.machines.create(alice, newMachine("one", true))),
        "card_verification_required"
      )
      const session = yield* s.purchases.cardCheck(org)
      const verified = stripe.sign("checkout.session.completed", {
        id: session.session_id,
        object: "checkout.session",
        mode: "setup",
        metadata: { organization_id: org, purpose: "card_check" }
      })
      yield* s.purchases.receive(verified.payload, verified.header)
      assert.strictEqual((yield* s.billing.view(org)).cardRequired, false)
      assert.strictEqual(yield* failureTag(s.machines.create(alice, newMachine("one", true))), "succeeded")
    }))
})

const TestClockNow = TestClock.currentTimeMillis

/** The worker's tick of the clock's time has ended: it sleeps until the next one, a minute on. */
const ticked = Effect.flatMap(TestClockNow, (now) => asleepUntil(now + 60_000))

/** The tick of the clock's time has ended; the clock moves to the next. */
const nextTick = Effect.zipRight(ticked, TestClock.adjust("60 seconds"))
