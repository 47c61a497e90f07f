/**
 * Money coming in, through the Payments port: checkouts (credit packs, plans, card checks), the
 * portal, the subscription's cancel and resume, the automatic refill, and the provider's events,
 * each applied once by its id in the same transaction as the balances it changes.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { InvalidRequest } from "../kernel/http/Errors.js"
import { Organizations } from "../organizations/Organizations.js"
import { Accounts, isPlanTier } from "./Accounts.js"
import { Billing } from "./Billing.js"
import { BillingCustomerMissing, BillingUnavailable, PaymentMethodMissing, SubscriptionMissing } from "./Errors.js"
import { monthOf } from "./Money.js"
import { makeNotices } from "./Notices.js"
import { Payments, type ProviderEvent, type Purpose } from "./Payments.js"
import { type AccountRow, BillingRepo } from "./Repo.js"

export interface CheckoutBody {
  readonly credit_packs?: number | null | undefined
  readonly plan?: string | null | undefined
  readonly end_trial: boolean
}

export interface AutoRefillBody {
  readonly credit_packs: number
  readonly enabled: boolean
  readonly monthly_cap_micros: number
  readonly threshold_micros: number
}

export interface LastCharge {
  readonly id: string
  readonly status: "pending" | "succeeded" | "failed"
  readonly amount_micros: number
  readonly credit_packs: number
  readonly failure_code: string | null
  readonly created_at: number
}

/** Stripe times are Unix seconds. */
const millis = (seconds: unknown) => (typeof seconds === "number" ? seconds * 1000 : null)

const failuresToDisable = 3

const make = Effect.gen(function*() {
  const payments = yield* Payments
  const accounts = yield* Accounts
  const notices = yield* makeNotices
  const billing = yield* Billing
  const repo = yield* BillingRepo
  const organizations = yield* Organizations
  const prices = accounts.prices

  const requireAvailable = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    payments.available
      ? effect
      : Effect.fail(new BillingUnavailable({ detail: "Payments are not configured on this server" }))

  /** The organization's customer at the provider, made at its first purchase and kept. */
  const customerOf = (organizationId: string) =>
    Effect.gen(function*() {
      const account = yield* accounts.ensure(organizationId)
      if (account.customer_id !== null) return account.customer_id
      const customerId = yield* payments.createCustomer(organizationId)
      const now = yield* Clock.currentTimeMillis
      yield* billing.durably(repo.update(organizationId, { customer_id: customerId, updated_at: now }))
      return customerId
    })

  const linkedCustomer = (organizationId: string) =>
    Effect.flatMap(accounts.ensure(organizationId), (account) =>
      account.customer_id === null
        ? Effect.fail(new BillingCustomerMissing({ detail: "No purchase has linked a payment customer yet" }))
        : Effect.succeed(account.customer_id))

  const startCheckout = (organizationId: string, purpose: Purpose, body: CheckoutBody) =>
    requireAvailable(Effect.gen(function*() {
      const customerId = yield* customerOf(organizationId)
      const plan = isPlanTier(body.plan ?? null) ? body.plan as never : null
      const creditPacks = purpose === "credits" ? body.credit_packs ?? null : null
      const session = yield* payments.checkout({
        organizationId,
        customerId,
        purpose,
        creditPacks,
        plan,
        endTrial: body.end_trial,
        amountMicros: (creditPacks ?? 0) * prices.credit_pack_micros
      })
      return { checkout_url: session.url, session_id: session.id }
    }))

  const subscriptionOf = (account: AccountRow) =>
    account.subscription_id === null || accounts.planOf(account) === null
      ? Effect.fail(new SubscriptionMissing({ detail: "No renewing subscription is linked" }))
      : Effect.succeed(account.subscription_id)

  const setCancel = (organizationId: string, cancel: boolean) =>
    requireAvailable(Effect.gen(function*() {
      const account = yield* accounts.ensure(organizationId)
      const subscription = yield* subscriptionOf(account)
      const state = yield* payments.setCancelAtPeriodEnd(subscription, cancel)
      if (state === "ended") return yield* new SubscriptionMissing({ detail: "The subscription already ended" })
      const now = yield* Clock.currentTimeMillis
      yield* billing.durably(repo.update(organizationId, {
        plan_cancel_at_period_end: cancel ? 1 : 0,
        updated_at: now
      }))
      return yield* billing.view(organizationId)
    }))

  /** Credit in, as a ledger row; the first payment also ends the trial rules. */
  const credit = (
    account: AccountRow,
    kind: "credit_purchase" | "refill",
    amount: number,
    description: string,
    reference: string
  ) =>
    Effect.gen(function*() {
      yield* accounts.post(account.organization_id, { kind, balance: "credit", amount, description, reference })
      yield* markPaid(account)
    })

  const markPaid = (account: AccountRow) =>
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        account.paid_at === null ? repo.update(account.organization_id, { paid_at: now, updated_at: now }) : Effect.void
    )

  const organizationOf = (object: Record<string, any>) =>
    Effect.gen(function*() {
      const direct = object.metadata?.organization_id ?? object.client_reference_id ??
        object.parent?.subscription_details?.metadata?.organization_id ??
        object.subscription_details?.metadata?.organization_id
      if (typeof direct === "string") return Option.some(direct)
      const customer = typeof object.customer === "string" ? object.customer : object.customer?.id
      return typeof customer === "string" ? yield* repo.byCustomer(customer) : Option.none<string>()
    })

  /** Applies one verified event to its organization's account (inside the event's transaction). */
  const apply = (event: ProviderEvent, account: AccountRow, now: number) =>
    Effect.gen(function*() {
      const object = event.object
      const organizationId = account.organization_id
      const metadata: Record<string, string> = object.metadata ?? {}
      switch (event.type) {
        case "checkout.session.completed": {
          const purpose = metadata.purpose
          if (object.customer !== undefined && account.customer_id === null) {
            yield* repo.update(organizationId, { customer_id: String(object.customer), updated_at: now })
          }
          if (purpose === "card_check") {
            yield* repo.update(organizationId, { card_verified_at: now, updated_at: now })
          } else if (purpose === "credits" && object.payment_status !== "unpaid") {
            const packs = Number(metadata.credit_packs ?? 0)
            yield* credit(
              account,
              "credit_purchase",
              packs * prices.credit_pack_micros,
              `${packs} credit packs`,
              object.id
            )
          } else if (purpose === "plan" && isPlanTier(metadata.plan ?? null)) {
            yield* repo.update(organizationId, {
              plan_tier: metadata.plan!,
              subscription_id: typeof object.subscription === "string" ? object.subscription : null,
              plan_renews: 1,
              plan_cancel_at_period_end: 0,
              plan_end_trial: metadata.end_trial === "true" ? 1 : 0,
              updated_at: now
            })
          }
          return
        }
        case "invoice.paid": {
          const line = object.lines?.data?.[0]
          const tier = object.parent?.subscription_details?.metadata?.plan ??
            object.subscription_details?.metadata?.plan ?? line?.metadata?.plan ?? account.plan_tier
          if (!isPlanTier(tier)) return
          const start = millis(line?.period?.start ?? object.period_start) ?? now
          const end = millis(line?.period?.end ?? object.period_end) ?? start + 30 * 86_400_000
          yield* accounts.post(organizationId, {
            kind: "plan_expiry",
            balance: "plan",
            amount: -account.plan_micros,
            description: "The period's unused allowance expired"
          })
          yield* accounts.post(organizationId, {
            kind: "plan_allowance",
            balance: "plan",
            amount: prices.plans[tier].included_micros,
            description: `Plan ${tier}: this period's allowance`,
            reference: object.id
          })
          const subscription = object.parent?.subscription_details?.subscription ?? object.subscription
          yield* repo.update(organizationId, {
            plan_tier: tier,
            ...(typeof subscription === "string" ? { subscription_id: subscription } : {}),
            plan_renews: 1,
            plan_period_start: start,
            plan_period_end: end,
            updated_at: now
          })
          yield* markPaid(account)
          const fresh = Option.getOrThrow(yield* repo.find(organizationId))
          if (fresh.plan_end_trial === 1) {
            yield* billing.forfeitTrial(fresh, now, "Trial forfeited for the plan's first payment")
            yield* repo.update(organizationId, { plan_end_trial: 0 })
          }
          return
        }
        case "customer.subscription.updated": {
          if (object.status === "canceled" || object.status === "incomplete_expired") {
            return yield* billing.endPlan(account, now)
          }
          const item = object.items?.data?.[0]
          const start = millis(object.current_period_start ?? item?.current_period_start)
          const end = millis(object.current_period_end ?? item?.current_period_end)
          yield* repo.update(organizationId, {
            plan_cancel_at_period_end: object.cancel_at_period_end === true ? 1 : 0,
            ...(start !== null ? { plan_period_start: start } : {}),
            ...(end !== null ? { plan_period_end: end } : {}),
            updated_at: now
          })
          return
        }
        case "customer.subscription.deleted":
          return yield* billing.endPlan(account, now)
        case "payment_intent.succeeded":
        case "payment_intent.payment_failed": {
          if (metadata.purpose !== "refill") return
          const packs = Number(metadata.credit_packs ?? 0)
          const amount = packs * prices.credit_pack_micros
          const succeeded = event.type === "payment_intent.succeeded"
          const failures = succeeded ? 0 : account.refill_failures + 1
          const last: LastCharge = {
            id: String(object.id),
            status: succeeded ? "succeeded" : "failed",
            amount_micros: amount,
            credit_packs: packs,
            failure_code: succeeded ? null : String(object.last_payment_error?.code ?? "payment_failed"),
            created_at: now
          }
          if (succeeded) yield* credit(account, "refill", amount, `Automatic refill: ${packs} credit packs`, object.id)
          yield* repo.update(organizationId, {
            refill_pending: null,
            refill_failures: failures,
            refill_last: JSON.stringify(last),
            ...(failures >= failuresToDisable ? { refill_enabled: 0, refill_disabled_reason: "payment_failed" } : {}),
            updated_at: now
          })
          return
        }
        default:
          return
      }
    })

  /** A verified event, applied once: its id is claimed in the transaction that applies it. */
  const receive = (body: string, signature: string | undefined) =>
    requireAvailable(Effect.gen(function*() {
      const event = yield* payments.verify(body, signature)
      yield* billing.durably(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (!(yield* repo.claimEvent(event.id, event.type, now))) return
        const organizationId = yield* organizationOf(event.object)
        if (Option.isNone(organizationId)) return
        // An event for an organization that is gone is recorded as seen and changes nothing.
        if (Option.isNone(yield* organizations.findById(organizationId.value))) return
        yield* apply(event, yield* accounts.ensure(organizationId.value), now)
        yield* notices.settle(organizationId.value)
      }))
      return { received: true }
    }))

  const refillView = (account: AccountRow | null, now: number) => {
    const last = account?.refill_last == null ? null : JSON.parse(account.refill_last) as LastCharge
    const packs = account?.refill_credit_packs ?? 1
    return {
      enabled: account?.refill_enabled === 1,
      credit_packs: packs,
      amount_micros: packs * prices.credit_pack_micros,
      threshold_micros: account?.refill_threshold_micros ?? 0,
      monthly_cap_micros: account?.refill_monthly_cap_micros ?? 0,
      charged_this_month_micros: account?.refill_month === monthOf(now) ? account.refill_charged_micros : 0,
      consecutive_failures: account?.refill_failures ?? 0,
      disabled_reason: account?.refill_disabled_reason ?? null,
      last_charge: last
    }
  }

  /** Starts the refills that are due: one charge at a time per organization, within the month's cap. */
  const refillDue = Effect.gen(function*() {
    if (!payments.available) return
    const now = yield* Clock.currentTimeMillis
    for (const account of yield* repo.due(now)) {
      if (account.refill_enabled !== 1 || account.refill_pending !== null || account.customer_id === null) continue
      if (account.credit_micros >= account.refill_threshold_micros) continue
      const amount = account.refill_credit_packs * prices.credit_pack_micros
      const month = monthOf(now)
      const charged = account.refill_month === month ? account.refill_charged_micros : 0
      if (charged + amount > account.refill_monthly_cap_micros) continue
      const key = `refill:${account.organization_id}:${month}:${charged}:${account.refill_failures}`
      // Recorded before the charge: a crash leaves it pending, and the same key repeats the same charge.
      yield* billing.durably(repo.update(account.organization_id, {
        refill_pending: key,
        refill_month: month,
        refill_charged_micros: charged + amount,
        updated_at: now
      }))
      yield* payments.charge({
        organizationId: account.organization_id,
        customerId: account.customer_id,
        amountMicros: amount,
        creditPacks: account.refill_credit_packs,
        key
      }).pipe(Effect.catchAll((error) => Effect.logWarning("refill charge failed", error)))
    }
  })

  return {
    checkout: (organizationId: string, body: CheckoutBody) =>
      Effect.gen(function*() {
        const packs = body.credit_packs ?? null
        const plan = body.plan ?? null
        if ((packs === null) === (plan === null)) {
          return yield* new InvalidRequest({
            field_errors: [{ field: "credit_packs", message: "give exactly one of credit_packs and plan" }]
          })
        }
        if (body.end_trial && plan === null) {
          return yield* new InvalidRequest({ field_errors: [{ field: "end_trial", message: "only with plan" }] })
        }
        return yield* startCheckout(organizationId, plan === null ? "credits" : "plan", body)
      }),
    cardCheck: (organizationId: string) => startCheckout(organizationId, "card_check", { end_trial: false }),
    portal: (organizationId: string) =>
      requireAvailable(
        Effect.flatMap(linkedCustomer(organizationId), (customer) =>
          Effect.map(payments.portal(customer), (url) => ({ url })))
      ),
    cancel: (organizationId: string) => setCancel(organizationId, true),
    resume: (organizationId: string) => setCancel(organizationId, false),
    receive,
    refillDue,
    autoRefill: (organizationId: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const account = accounts.metered ? yield* accounts.ensure(organizationId) : null
        return refillView(account, now)
      }),
    setAutoRefill: (organizationId: string, body: AutoRefillBody) =>
      requireAvailable(Effect.gen(function*() {
        const amount = body.credit_packs * prices.credit_pack_micros
        if (body.monthly_cap_micros < amount) {
          return yield* new InvalidRequest({
            field_errors: [{ field: "monthly_cap_micros", message: `at least one refill's amount (${amount})` }]
          })
        }
        if (body.enabled) {
          const customer = yield* linkedCustomer(organizationId)
          if (!(yield* payments.hasDefaultPaymentMethod(customer))) {
            return yield* new PaymentMethodMissing({ detail: "Add a default payment method in the billing portal" })
          }
        }
        const now = yield* Clock.currentTimeMillis
        yield* billing.durably(repo.update(organizationId, {
          refill_enabled: body.enabled ? 1 : 0,
          refill_credit_packs: body.credit_packs,
          refill_threshold_micros: body.threshold_micros,
          refill_monthly_cap_micros: body.monthly_cap_micros,
          ...(body.enabled ? { refill_failures: 0, refill_disabled_reason: null } : {}),
          updated_at: now
        }))
        return refillView(yield* accounts.ensure(organizationId), now)
      }))
  }
})

export class Purchases extends Context.Tag("svc/billing/Purchases")<Purchases, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Purchases, make)
}
