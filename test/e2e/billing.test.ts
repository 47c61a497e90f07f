/**
 * Billing over HTTP on a real server, with payments through the official `stripe` client talking to
 * a Stripe-compatible server on loopback (test/support/StripeServer.ts): both modes, every billing
 * route with its errors, checkouts carrying their metadata, signed events applied once (also when
 * one is delivered 20 times at once), a bad signature refused, the provider failing or timing out
 * (502), and the operator's grants.
 */
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Option, Redacted } from "effect"
import { cheapPrices } from "../billing/support.js"
import { client, request } from "../support/Http.js"
import { startStripeServer, stripeSettings } from "../support/StripeServer.js"
import { startServer } from "../support/TestServer.js"

const operatorToken = "operator-secret"

const setup = (stripe: Effect.Effect.Success<typeof startStripeServer> | null, timeoutSeconds = 10) =>
  Effect.gen(function*() {
    const server = yield* startServer({
      billing: "metered",
      prices: cheapPrices({ trial: { total_micros: 5_000_000 } }),
      operatorToken: Option.some(Redacted.make(operatorToken)),
      ...(stripe === null
        ? {}
        : { stripe: stripeSettings(stripe, timeoutSeconds), payments: Option.some("stripe" as const) })
    })
    const owner = yield* server.bootstrap("owner@example.com")
    const api = client(server.url, { key: owner.api_key })
    const deliver = (event: { payload: string; header: string }) =>
      request(server.url, "POST", "/v1/billing/stripe/webhook", {
        body: event.payload,
        headers: { "content-type": "application/json", "stripe-signature": event.header }
      })
    const operator = (path: string, json: unknown) =>
      request(server.url, "POST", path, { json, headers: { "x-svc-operator-token": operatorToken } })
    return { server, owner, api, deliver, operator }
  })

describe("billing over HTTP", () => {
  it.scopedLive("unlimited (the default): reads answer, payment routes 501, limits from the unlimited tier", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* server.bootstrap("owner@example.com")
      const api = client(server.url, { key: owner.api_key })
      const billing = (yield* api("GET", "/v1/billing")).body
      assert.strictEqual(billing.status, "unlimited")
      assert.deepStrictEqual(billing.balances, {
        credit_micros: 0,
        plan_micros: 0,
        spendable_micros: 0,
        trial_micros: 0
      })
      assert.strictEqual(billing.trial.active, false)
      assert.strictEqual(billing.payments_available, false)
      assert.strictEqual(billing.limits.tier, "unlimited")
      for (
        const [method, path, json] of [
          ["POST", "/v1/billing/checkout", { credit_packs: 1 }],
          ["POST", "/v1/billing/portal", undefined],
          ["POST", "/v1/billing/card-check", undefined],
          ["POST", "/v1/billing/subscription/cancel", undefined],
          ["POST", "/v1/billing/subscription/resume", undefined],
          ["PUT", "/v1/billing/auto-refill", {
            credit_packs: 1,
            enabled: false,
            monthly_cap_micros: 20_000_000,
            threshold_micros: 0
          }],
          ["POST", "/v1/billing/stripe/webhook", { id: "evt_1" }]
        ] as const
      ) {
        const reply = yield* api(method, path, json === undefined ? {} : { json })
        assert.strictEqual(reply.status, 501, `${method} ${path}`)
        assert.strictEqual(reply.body.code, "billing_unavailable")
      }
      assert.strictEqual((yield* api("GET", "/v1/limits")).body.tier, "unlimited")
      assert.deepStrictEqual((yield* api("GET", "/v1/billing/ledger")).body, { items: [], next_cursor: null })
      const usage = (yield* api("GET", "/v1/usage")).body
      assert.strictEqual(usage.seconds, 0)
      assert.strictEqual((yield* api("GET", "/v1/billing/auto-refill")).body.enabled, false)
      assert.strictEqual((yield* api("GET", "/v1/billing/invoice-preview")).body.usage_micros, 0)
      assert.strictEqual((yield* api("GET", "/v1/usage?since=yesterday")).status, 422)
      const reversed = yield* api("GET", "/v1/usage?since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z")
      assert.strictEqual(reversed.status, 422)
      assert.strictEqual((yield* api("GET", "/v1/machines/00000000-0000-4000-8000-000000000000/usage")).status, 404)
    }))

  it.scopedLive("metered with Stripe: credits, a plan with end_trial, card check, portal, cancel and resume, auto-refill", () =>
    Effect.gen(function*() {
      const stripe = yield* startStripeServer
      const { api, deliver, owner } = yield* setup(stripe)
      const org = owner.organization_id
      const first = (yield* api("GET", "/v1/billing")).body
      assert.strictEqual(first.status, "trial")
      assert.strictEqual(first.payments_available, true)
      assert.strictEqual(first.payment_customer_linked, false)
      assert.strictEqual(first.balances.trial_micros, 5_000_000)

      const portal = yield* api("POST", "/v1/billing/portal")
      assert.strictEqual(portal.status, 409)
      assert.strictEqual(portal.body.code, "billing_customer_missing")
      assert.strictEqual((yield* api("POST", "/v1/billing/checkout", { json: {} })).status, 422)
      assert.strictEqual((yield* api("POST", "/v1/billing/checkout", { json: { credit_packs: 51 } })).status, 422)
      assert.strictEqual(
        (yield* api("POST", "/v1/billing/checkout", { json: { credit_packs: 1, plan: "pro" } })).status,
        422
      )

      // Credits: a customer (one per organization) and a payment-mode session with the metadata.
      const checkout = yield* api("POST", "/v1/billing/checkout", { json: { credit_packs: 2 } })
      assert.strictEqual(checkout.status, 201)
      assert.match(checkout.body.checkout_url, /^https:\/\/checkout\.stripe\.test\//)
      const made = stripe.requests.filter((r) => r.path === "/v1/customers")
      assert.strictEqual(made.length, 1)
      assert.strictEqual(made[0]!.body.metadata.organization_id, org)
      const session = stripe.requests.find((r) => r.path === "/v1/checkout/sessions")!.body
      assert.strictEqual(session.mode, "payment")
      assert.strictEqual(session.client_reference_id, org)
      assert.deepStrictEqual(session.metadata, {
        organization_id: org,
        purpose: "credits",
        credit_packs: "2",
        plan: "",
        end_trial: "false"
      })
      assert.strictEqual(session.line_items[0].quantity, "2")
      assert.strictEqual(session.line_items[0].price_data.unit_amount, "2000")
      const customer = session.customer as string

      const completed = stripe.sign("checkout.session.completed", {
        id: checkout.body.session_id,
        object: "checkout.session",
        mode: "payment",
        payment_status: "paid",
        customer,
        client_reference_id: org,
        metadata: session.metadata
      })
      assert.strictEqual((yield* deliver(completed)).status, 200)
      assert.strictEqual((yield* deliver(completed)).status, 200) // a repeat applies nothing
      // A bad signature (another secret) answers 400 and changes nothing.
      const forged = stripe.sign("checkout.session.completed", { metadata: session.metadata }, {
        secret: "whsec_other"
      })
      const refused = yield* deliver(forged)
      assert.strictEqual(refused.status, 400)
      assert.strictEqual(refused.body.code, "invalid_signature")
      const paid = (yield* api("GET", "/v1/billing")).body
      assert.strictEqual(paid.balances.credit_micros, 2 * 20_000_000)
      assert.strictEqual(paid.status, "active")
      assert.strictEqual(paid.payment_customer_linked, true)
      const ledger = (yield* api("GET", "/v1/billing/ledger")).body.items
      assert.deepStrictEqual(ledger.map((row: any) => [row.kind, row.balance, row.amount_micros]), [
        ["credit_purchase", "credit", 40_000_000],
        ["trial_grant", "trial", 5_000_000]
      ])
      assert.strictEqual(ledger[0].reference, checkout.body.session_id)

      // A plan with end_trial: the subscription's first invoice grants the allowance and forfeits the trial.
      const plan = yield* api("POST", "/v1/billing/checkout", { json: { plan: "pro", end_trial: true } })
      assert.strictEqual(plan.status, 201)
      const planSession = stripe.requests.filter((r) => r.path === "/v1/checkout/sessions")[1]!.body
      assert.strictEqual(planSession.mode, "subscription")
      assert.strictEqual(planSession.line_items[0].price, "price_pro")
      assert.strictEqual(planSession.metadata.end_trial, "true")
      assert.strictEqual(stripe.requests.filter((r) => r.path === "/v1/customers").length, 1)
      const subscription = stripe.addSubscription(customer, planSession.metadata)
      yield* deliver(stripe.sign("checkout.session.completed", {
        id: plan.body.session_id,
        object: "checkout.session",
        mode: "subscription",
        customer,
        subscription: subscription.id,
        metadata: planSession.metadata
      }))
      const start = Math.floor(Date.now() / 1000)
      yield* deliver(stripe.sign("invoice.paid", {
        id: "in_1",
        object: "invoice",
        customer,
        parent: { subscription_details: { subscription: subscription.id, metadata: planSession.metadata } },
        lines: { data: [{ period: { start, end: start + 30 * 86_400 } }] }
      }))
      const planned = (yield* api("GET", "/v1/billing")).body
      assert.strictEqual(planned.plan.active, true)
      assert.strictEqual(planned.plan.tier, "pro")
      assert.strictEqual(planned.plan.renews, true)
      assert.strictEqual(planned.balances.plan_micros, 110_000_000)
      assert.strictEqual(planned.balances.trial_micros, 0)
      assert.strictEqual(planned.limits.tier, "pro")
      assert.strictEqual(planned.limits.concurrent_machines.limit, 20)
      const kinds = (yield* api("GET", "/v1/billing/ledger?limit=2")).body
      assert.deepStrictEqual(kinds.items.map((row: any) => row.kind), ["trial_forfeit", "plan_allowance"])
      assert.isString(kinds.next_cursor)
      const older = (yield* api("GET", `/v1/billing/ledger?limit=50&cursor=${kinds.next_cursor}`)).body.items
      // No plan_expiry row: there was no allowance to expire (a row is written only for a change).
      assert.deepStrictEqual(older.map((row: any) => row.kind), ["credit_purchase", "trial_grant"])

      // Cancel at period end, then resume.
      const cancelled = yield* api("POST", "/v1/billing/subscription/cancel")
      assert.strictEqual(cancelled.status, 200)
      assert.strictEqual(cancelled.body.plan.cancel_at_period_end, true)
      assert.strictEqual(cancelled.body.plan.renews, false)
      assert.strictEqual(stripe.subscriptions.get(subscription.id).cancel_at_period_end, true)
      const resumed = yield* api("POST", "/v1/billing/subscription/resume")
      assert.strictEqual(resumed.body.plan.cancel_at_period_end, false)
      assert.strictEqual(stripe.subscriptions.get(subscription.id).cancel_at_period_end, false)

      // Card check: a setup-mode session; its completion records the verification.
      const card = yield* api("POST", "/v1/billing/card-check")
      assert.strictEqual(card.status, 201)
      const setupSession = stripe.requests.filter((r) => r.path === "/v1/checkout/sessions")[2]!.body
      assert.strictEqual(setupSession.mode, "setup")
      assert.strictEqual(setupSession.metadata.purpose, "card_check")
      yield* deliver(stripe.sign("checkout.session.completed", {
        id: card.body.session_id,
        object: "checkout.session",
        mode: "setup",
        customer,
        metadata: setupSession.metadata
      }))
      assert.isString((yield* api("GET", "/v1/billing")).body.card_check.verified_at)

      // The portal, now that a customer is linked.
      const opened = yield* api("POST", "/v1/billing/portal")
      assert.strictEqual(opened.status, 201)
      assert.match(opened.body.url, /^https:\/\/billing\.stripe\.test\//)

      // Auto-refill needs a default payment method at the provider.
      const refill = { credit_packs: 1, enabled: true, monthly_cap_micros: 40_000_000, threshold_micros: 10_000_000 }
      const missing = yield* api("PUT", "/v1/billing/auto-refill", { json: refill })
      assert.strictEqual(missing.status, 409)
      assert.strictEqual(missing.body.code, "payment_method_missing")
      assert.strictEqual(
        (yield* api("PUT", "/v1/billing/auto-refill", { json: { ...refill, monthly_cap_micros: 1 } })).status,
        422
      )
      stripe.customers.get(customer).invoice_settings.default_payment_method = "pm_card_visa"
      const enabled = yield* api("PUT", "/v1/billing/auto-refill", { json: refill })
      assert.strictEqual(enabled.status, 200)
      assert.strictEqual(enabled.body.enabled, true)
      assert.strictEqual(enabled.body.amount_micros, 20_000_000)

      // PATCH: minimum balance and spend cap.
      const patched = yield* api("PATCH", "/v1/billing", {
        json: { minimum_balance_micros: 1_000, spend_cap_micros: 5_000 }
      })
      assert.strictEqual(patched.status, 200)
      assert.strictEqual(patched.body.minimum_balance_micros, 1_000)
      assert.strictEqual(patched.body.spend_cap_micros, 5_000)
      assert.strictEqual(patched.body.balances.spendable_micros, 110_000_000 + 5_000 - 1_000)
      assert.strictEqual((yield* api("PATCH", "/v1/billing", { json: { spend_cap_micros: -1 } })).status, 422)
      // The subscription ends: the plan and its allowance go.
      yield* deliver(
        stripe.sign("customer.subscription.deleted", { id: subscription.id, object: "subscription", customer })
      )
      const ended = (yield* api("GET", "/v1/billing")).body
      assert.strictEqual(ended.plan.active, false)
      assert.strictEqual(ended.balances.plan_micros, 0)
      assert.strictEqual((yield* api("POST", "/v1/billing/subscription/cancel")).body.code, "subscription_missing")
    }))

  it.scopedLive("the same Stripe event delivered 20 times at once applies once", () =>
    Effect.gen(function*() {
      const stripe = yield* startStripeServer
      const { api, deliver, owner } = yield* setup(stripe)
      const event = stripe.sign("checkout.session.completed", {
        id: "cs_test_once",
        object: "checkout.session",
        mode: "payment",
        payment_status: "paid",
        client_reference_id: owner.organization_id,
        metadata: { organization_id: owner.organization_id, purpose: "credits", credit_packs: "3" }
      })
      const replies = yield* Effect.all(Array.from({ length: 20 }, () => deliver(event)), { concurrency: "unbounded" })
      assert.deepStrictEqual(replies.map((reply) => reply.status), Array(20).fill(200))
      const billing = (yield* api("GET", "/v1/billing")).body
      assert.strictEqual(billing.balances.credit_micros, 3 * 20_000_000)
      const purchases = (yield* api("GET", "/v1/billing/ledger")).body.items.filter((row: any) =>
        row.kind === "credit_purchase"
      )
      assert.strictEqual(purchases.length, 1)
    }))

  it.scopedLive("the provider failing or timing out answers 502 payment_provider_error", () =>
    Effect.gen(function*() {
      const stripe = yield* startStripeServer
      const { api } = yield* setup(stripe, 1)
      stripe.state.failing = true
      const failed = yield* api("POST", "/v1/billing/checkout", { json: { credit_packs: 1 } })
      assert.strictEqual(failed.status, 502)
      assert.strictEqual(failed.body.code, "payment_provider_error")
      stripe.state.failing = false
      stripe.state.hanging = true
      const timedOut = yield* api("POST", "/v1/billing/card-check")
      assert.strictEqual(timedOut.status, 502)
      assert.strictEqual(timedOut.body.code, "payment_provider_error")
      stripe.state.hanging = false
      assert.strictEqual((yield* api("POST", "/v1/billing/card-check")).status, 201)
    }), 60_000)

  it.scopedLive("operator grants: credits and trial days, audited; 404 for an unknown organization; 401 without the token", () =>
    Effect.gen(function*() {
      const { api, operator, owner, server } = yield* setup(null)
      const org = owner.organization_id
      const granted = yield* operator("/v1/operator/billing/credits", {
        organization_id: org,
        amount_micros: 7_000_000,
        operator: "ops@example.com",
        reason: "support ticket 12"
      })
      assert.strictEqual(granted.status, 200)
      assert.strictEqual(granted.body.balances.credit_micros, 7_000_000)
      const row = (yield* api("GET", "/v1/billing/ledger")).body.items[0]
      assert.strictEqual(row.kind, "credit_grant")
      assert.strictEqual(row.reference, "ops@example.com")
      const trial = yield* operator("/v1/operator/billing/grants", {
        organization_id: org,
        trial_micros: 1_000_000,
        trial_days: 7,
        operator: "ops@example.com",
        reason: "extension"
      })
      assert.strictEqual(trial.status, 200)
      assert.strictEqual(trial.body.balances.trial_micros, 6_000_000)
      const unknown = yield* operator("/v1/operator/billing/credits", {
        organization_id: "00000000-0000-4000-8000-000000000000",
        amount_micros: 1,
        operator: "ops",
        reason: "x"
      })
      assert.strictEqual(unknown.status, 404)
      const invalid = yield* operator("/v1/operator/billing/credits", {
        organization_id: org,
        amount_micros: 0,
        operator: "",
        reason: "x"
      })
      assert.strictEqual(invalid.status, 422)
      const anonymous = yield* request(server.url, "POST", "/v1/operator/billing/credits", {
        json: { organization_id: org, amount_micros: 1, operator: "x", reason: "y" }
      })
      assert.strictEqual(anonymous.status, 401)
      // Roles: billing changes are for Owner and Billing; reads for any member; a read_only key only reads.
      const readOnly =
        (yield* api("POST", "/v1/api-keys", { json: { name: "reader", preset: "read_only" } })).body.secret
      const reader = client(server.url, { key: readOnly })
      assert.strictEqual((yield* reader("GET", "/v1/billing/invoice-preview")).status, 200)
      const scoped = yield* reader("PATCH", "/v1/billing", { json: { spend_cap_micros: 1 } })
      assert.strictEqual(scoped.status, 403)
      assert.strictEqual(scoped.body.code, "insufficient_scope")
      const db = new Database(server.config.databaseFile)
      const role = (name: string) =>
        db.prepare("UPDATE memberships SET role = ? WHERE user_id = ?").run(name, owner.user_id)
      role("billing")
      assert.strictEqual((yield* api("PATCH", "/v1/billing", { json: { spend_cap_micros: 1 } })).status, 200)
      role("admin")
      const admin = yield* api("POST", "/v1/billing/trial/end")
      assert.strictEqual(admin.status, 403)
      assert.strictEqual(admin.body.code, "forbidden")
      assert.strictEqual((yield* api("GET", "/v1/billing")).status, 200)
      role("owner")
      db.close()
    }))
})
