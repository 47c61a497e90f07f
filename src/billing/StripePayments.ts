/**
 * The Payments port over Stripe's official client. `SVC_STRIPE_API_BASE` points it at a
 * Stripe-compatible server (the tests start one on loopback). Over https it trusts the CAs of
 * `SVC_EXTRA_CA_CERTS` besides Node's (a TLS-inspecting proxy's). Every call has a timeout; a failure
 * or timeout answers 502 `payment_provider_error`. Checkout Sessions carry `client_reference_id`
 * and the metadata `{organization_id, purpose, credit_packs, plan, end_trial}` so their events
 * find their organization.
 */
import { Effect, Layer, Redacted } from "effect"
import * as NodeHttps from "node:https"
import Stripe from "stripe"
import { AppConfig, type StripeSettings } from "../kernel/config/AppConfig.js"
import { trustedCas } from "../kernel/tls/TrustedCas.js"
import { InvalidSignature, PaymentProviderError } from "./Errors.js"
import { Payments, type PaymentsShape } from "./Payments.js"

/** Seconds a signed event stays acceptable (replays older than this are refused). */
const signatureTolerance = 300

/** Stripe amounts are cents; ours are micros. */
const cents = (micros: number) => Math.round(micros / 10_000)

const clientOf = (settings: StripeSettings, extraCaCerts: ReadonlyArray<string> | undefined) => {
  const base = settings.apiBase === undefined ? undefined : new URL(settings.apiBase)
  const ca = base?.protocol === "http:" ? undefined : trustedCas(extraCaCerts)
  return new Stripe(Redacted.value(settings.secretKey), {
    maxNetworkRetries: 1,
    timeout: (settings.timeoutSeconds ?? 10) * 1000,
    telemetry: false,
    ...(ca === undefined ? {} : { httpAgent: new NodeHttps.Agent({ keepAlive: true, ca: [...ca] }) }),
    ...(base === undefined ? {} : {
      host: base.hostname,
      port: base.port === "" ? (base.protocol === "https:" ? 443 : 80) : Number(base.port),
      protocol: base.protocol === "https:" ? "https" : "http"
    })
  })
}

const call = <A>(what: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (error) =>
      new PaymentProviderError({
        detail: `The payment provider failed to ${what}: ${error instanceof Error ? error.message : String(error)}`
      })
  })

export const make = (
  settings: StripeSettings,
  returnUrl: string,
  extraCaCerts?: ReadonlyArray<string>
): PaymentsShape => {
  const stripe = clientOf(settings, extraCaCerts)
  const secret = Redacted.value(settings.webhookSecret)
  return {
    available: true,
    createCustomer: (organizationId) =>
      call("create a customer", () =>
        stripe.customers.create(
          { metadata: { organization_id: organizationId } },
          { idempotencyKey: `customer:${organizationId}` }
        )).pipe(Effect.map((customer) => customer.id)),
    checkout: (request) => {
      const metadata = {
        organization_id: request.organizationId,
        purpose: request.purpose,
        credit_packs: String(request.creditPacks ?? ""),
        plan: request.plan ?? "",
        end_trial: String(request.endTrial)
      }
      const common = {
        customer: request.customerId,
        client_reference_id: request.organizationId,
        metadata,
        success_url: `${returnUrl}?checkout=success`,
        cancel_url: `${returnUrl}?checkout=cancelled`
      }
      const params: Stripe.Checkout.SessionCreateParams = request.purpose === "credits"
        ? {
          ...common,
          mode: "payment",
          line_items: [{
            quantity: request.creditPacks ?? 1,
            price_data: {
              currency: "usd",
              unit_amount: cents(request.amountMicros / (request.creditPacks ?? 1)),
              product_data: { name: "svc credit pack" }
            }
          }],
          payment_intent_data: { metadata, setup_future_usage: "off_session" }
        }
        : request.purpose === "plan"
        ? {
          ...common,
          mode: "subscription",
          line_items: [{ price: settings.prices[request.plan!], quantity: 1 }],
          subscription_data: { metadata }
        }
        : { ...common, mode: "setup", currency: "usd", setup_intent_data: { metadata } }
      return call("start a checkout", () => stripe.checkout.sessions.create(params)).pipe(
        Effect.map((session) => ({ url: session.url ?? "", id: session.id }))
      )
    },
    portal: (customerId) =>
      call(
        "open the billing portal",
        () => stripe.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl })
      ).pipe(
        Effect.map((session) => session.url)
      ),
    setCancelAtPeriodEnd: (subscriptionId, cancel) =>
      call(
        "change the subscription",
        () => stripe.subscriptions.update(subscriptionId, { cancel_at_period_end: cancel })
      ).pipe(
        Effect.map((subscription) =>
          subscription.status === "canceled" || subscription.status === "incomplete_expired"
            ? "ended" as const
            : "active" as const
        )
      ),
    hasDefaultPaymentMethod: (customerId) =>
      call("read the customer", () => stripe.customers.retrieve(customerId)).pipe(
        Effect.map((customer) =>
          !("deleted" in customer && customer.deleted === true) &&
          (customer as Stripe.Customer).invoice_settings?.default_payment_method != null
        )
      ),
    charge: (request) =>
      Effect.gen(function*() {
        const customer = yield* call("read the customer", () => stripe.customers.retrieve(request.customerId))
        const method = (customer as Stripe.Customer).invoice_settings?.default_payment_method
        const intent = yield* call("charge the card", () =>
          stripe.paymentIntents.create({
            amount: cents(request.amountMicros),
            currency: "usd",
            customer: request.customerId,
            ...(method == null ? {} : { payment_method: typeof method === "string" ? method : method.id }),
            off_session: true,
            confirm: true,
            metadata: {
              organization_id: request.organizationId,
              purpose: "refill",
              credit_packs: String(request.creditPacks)
            }
          }, { idempotencyKey: request.key }))
        return { id: intent.id, status: intent.status }
      }),
    verify: (body, signature) =>
      Effect.try({
        try: () => {
          const event = stripe.webhooks.constructEvent(body, signature ?? "", secret, signatureTolerance)
          return { id: event.id, type: event.type, object: event.data.object as unknown as Record<string, any> }
        },
        catch: (error) =>
          new InvalidSignature({ detail: error instanceof Error ? error.message : "The signature does not verify" })
      })
  }
}

/** Stripe when the configuration names it (and billing is metered), else no payments (501). */
export const layer = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    config.billing === "metered" && config.stripe !== undefined
      ? Layer.succeed(Payments, make(config.stripe, `${config.uiUrl}/billing`, config.extraCaCerts))
      : Payments.none)
)
