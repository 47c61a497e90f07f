/**
 * The ledger survives kill -9: `svc serve` (metered, paying through the Stripe-compatible server on
 * loopback) is killed with SIGKILL in the middle of a burst of meter ticks (every second, machines
 * running), credit purchases delivered as signed events, operator grants and automatic refills.
 * After a restart on the same data dir, for every balance the sum of its ledger rows equals the
 * balance, every event answered 200 before the kill is applied, and delivering every event again
 * applies none twice.
 */
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Exit, Fiber } from "effect"
import * as NodePath from "node:path"
import { kill, nodeEnv, run, serve } from "../support/Binary.js"
import { client, request } from "../support/Http.js"
import { eventually } from "../support/Machines.js"
import { secretKey, startStripeServer, webhookSecret } from "../support/StripeServer.js"

const operatorToken = "operator-secret"

describe("billing durability", () => {
  it.scopedLive(
    "SIGKILL during ticks, purchases, grants and refills: the ledger adds up, no event applies twice",
    () =>
      Effect.gen(function*() {
        const stripe = yield* startStripeServer
        const { dataDir, env, url: base } = yield* nodeEnv({
          SVC_BILLING: "metered",
          SVC_METER_SECONDS: "1",
          SVC_PRICES: JSON.stringify({ hourly_micros: { small: 3_600_000 }, trial: { max_hourly_micros: 1e9 } }),
          SVC_PAYMENTS: "stripe",
          SVC_STRIPE_SECRET_KEY: secretKey,
          SVC_STRIPE_WEBHOOK_SECRET: webhookSecret,
          SVC_STRIPE_API_BASE: stripe.url,
          SVC_OPERATOR_TOKEN: operatorToken
        })
        const first = yield* serve(env)
        const boot = yield* run(["admin", "bootstrap", "--email", "ops@example.com", "--data-dir", dataDir])
        const { api_key, organization_id: org } = JSON.parse(boot.stdout)
        const api = client(base, { key: api_key })

        // Machines running, so every tick charges; a customer with a card, so refills run.
        for (const name of ["a", "b"]) {
          assert.strictEqual((yield* api("POST", "/v1/machines", { json: { name, size: "small" } })).status, 202)
        }
        assert.strictEqual((yield* api("POST", "/v1/billing/checkout", { json: { credit_packs: 1 } })).status, 201)
        const customer = [...stripe.customers.values()][0]
        customer.invoice_settings.default_payment_method = "pm_card_visa"
        const refill = yield* api("PUT", "/v1/billing/auto-refill", {
          json: { credit_packs: 1, enabled: true, monthly_cap_micros: 1e12, threshold_micros: 1e12 }
        })
        assert.strictEqual(refill.status, 200)

        // The machines run and a tick has charged them before the burst (a loaded host starts them late).
        const usageRows = () => {
          const db = new Database(NodePath.join(dataDir, "svc.db"), { readonly: true })
          try {
            return (db.prepare("SELECT count(*) AS n FROM billing_ledger WHERE kind = 'usage'").get() as any)
              .n as number
          } finally {
            db.close()
          }
        }
        yield* eventually(Effect.sync(() => usageRows() > 0 ? true : undefined), 60_000)

        const events: Array<{ payload: string; header: string }> = []
        const answered: Array<number> = []
        const deliver = (event: { payload: string; header: string }) =>
          request(base, "POST", "/v1/billing/stripe/webhook", {
            body: event.payload,
            headers: { "content-type": "application/json", "stripe-signature": event.header }
          })
        const purchase = (n: number) => {
          const event = stripe.sign("checkout.session.completed", {
            id: `cs_${n}`,
            object: "checkout.session",
            mode: "payment",
            payment_status: "paid",
            metadata: { organization_id: org, purpose: "credits", credit_packs: "1" }
          }, { id: `evt_purchase_${n}` })
          events.push(event)
          return event
        }
        const refillSucceeded = (intent: { body: Record<string, any> }, n: number) => {
          const event = stripe.sign("payment_intent.succeeded", {
            id: `pi_${n}`,
            object: "payment_intent",
            metadata: intent.body.metadata
          }, { id: `evt_refill_${n}` })
          events.push(event)
          return event
        }
        let refillsAnswered = 0
        const burst = Effect.gen(function*() {
          for (let n = 0; n < 400; n++) {
            const reply = yield* Effect.exit(Effect.all([
              deliver(purchase(n)),
              request(base, "POST", "/v1/operator/billing/credits", {
                json: { organization_id: org, amount_micros: 1_000 + n, operator: "ops", reason: `burst ${n}` },
                headers: { "x-svc-operator-token": operatorToken }
              })
            ], { concurrency: 2 }))
            if (Exit.isFailure(reply)) return
            if (reply.value[0].status === 200) answered.push(n)
            // Each refill charge the server started is answered by its success event.
            const intents = stripe.requests.filter((r) => r.path === "/v1/payment_intents")
            while (refillsAnswered < intents.length) {
              const done = yield* Effect.exit(deliver(refillSucceeded(intents[refillsAnswered]!, refillsAnswered)))
              if (Exit.isFailure(done)) return
              refillsAnswered++
            }
          }
        }).pipe(Effect.catchAllDefect(() => Effect.void))
        const fiber = yield* Effect.fork(burst)
        // Killed once a meter tick has charged too: on a quick host 60 events take less than a tick.
        const charged = () => {
          const db = new Database(NodePath.join(dataDir, "svc.db"), { readonly: true })
          try {
            return db.prepare("SELECT 1 FROM billing_ledger WHERE kind = 'usage' LIMIT 1").get() !== undefined
          } finally {
            db.close()
          }
        }
        yield* eventually(
          Effect.sync(() => answered.length >= 60 && refillsAnswered >= 1 && charged() ? true : undefined),
          60_000
        )
        yield* kill(first)
        yield* Fiber.join(fiber)
        assert.isBelow(answered.length, 400, "the kill came in the middle of the burst")

        const database = NodePath.join(dataDir, "svc.db")
        const check = () => {
          const db = new Database(database, { readonly: true })
          try {
            const account = db.prepare("SELECT * FROM billing_accounts WHERE organization_id = ?").get(org) as any
            const sums = Object.fromEntries(
              (db.prepare(
                "SELECT balance, SUM(amount_micros) AS total FROM billing_ledger WHERE organization_id = ? GROUP BY balance"
              )
                .all(org) as Array<{ balance: string; total: number }>).map((row) => [row.balance, row.total])
            )
            const purchases = db.prepare("SELECT reference FROM billing_ledger WHERE kind = 'credit_purchase'")
              .all() as Array<{
                reference: string
              }>
            const refills = db.prepare("SELECT reference FROM billing_ledger WHERE kind = 'refill'").all() as Array<
              { reference: string }
            >
            const usage = (db.prepare("SELECT count(*) AS n FROM billing_ledger WHERE kind = 'usage'").get() as any)
              .n as number
            return { account, sums, purchases, refills, usage }
          } finally {
            db.close()
          }
        }
        const afterKill = check()
        assert.isAbove(afterKill.usage, 0, "meter ticks ran before the kill")
        for (const balance of ["trial", "plan", "credit"] as const) {
          assert.strictEqual(afterKill.sums[balance] ?? 0, afterKill.account[`${balance}_micros`], balance)
        }
        const applied = new Set(afterKill.purchases.map((row) => row.reference))
        for (const n of answered) assert.isTrue(applied.has(`cs_${n}`), `event ${n} was answered 200 before the kill`)

        // Restart; deliver every event again, twice: none applies twice.
        yield* serve(env)
        for (const event of [...events, ...events]) {
          const reply = yield* deliver(event)
          assert.strictEqual(reply.status, 200)
        }
        // Two meter ticks charge after the restart (the idle signal: rows, not a pause), then the sums.
        const usageAtRestart = check().usage
        yield* eventually(Effect.sync(() => check().usage >= usageAtRestart + 2 ? true : undefined), 60_000)
        const final = check()
        for (const balance of ["trial", "plan", "credit"] as const) {
          assert.strictEqual(final.sums[balance] ?? 0, final.account[`${balance}_micros`], balance)
        }
        const references = final.purchases.map((row) => row.reference)
        assert.strictEqual(new Set(references).size, references.length, "no purchase applied twice")
        const refillRefs = final.refills.map((row) => row.reference)
        assert.strictEqual(new Set(refillRefs).size, refillRefs.length, "no refill applied twice")
        assert.strictEqual(references.length, events.filter((e) => e.payload.includes("checkout.session")).length)
        assert.isAbove(final.usage, afterKill.usage, "metering went on after the restart")
      }),
    240_000
  )
})
