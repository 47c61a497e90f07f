/** Billing, usage and the operator's billing routes (api.md "Billing, usage, limits"; docs/billing.md). */
import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { planTiers } from "../kernel/config/AppConfig.js"
import { Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { NullableTimestamp, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { pageFields } from "../kernel/http/Pagination.js"
import { policy } from "../kernel/http/Policy.js"
import { LimitsDto } from "../limits/Api.js"
import {
  BillingCustomerMissing,
  InvalidSignature,
  paymentErrors,
  PaymentMethodMissing,
  SubscriptionMissing
} from "./Errors.js"
import { ledgerKinds } from "./LedgerKinds.js"

const Micros = Schema.Int
/** Amounts a caller sets: whole micros, at most 10^12 (a million dollars). */
const SetMicros = Schema.Int.pipe(Schema.between(0, 1e12))
const CreditPacks = Schema.Int.pipe(Schema.between(1, 50))
const PlanName = Schema.Literal(...planTiers)

export const PlanDto = Schema.Struct({
  active: Schema.Boolean,
  cancel_at_period_end: Schema.Boolean,
  renews: Schema.Boolean,
  included_micros: Micros,
  included_seconds: Schema.Int,
  price_micros: Micros,
  period_start: NullableTimestamp,
  period_end: NullableTimestamp,
  tier: Schema.NullOr(PlanName)
}).annotations({ identifier: "Plan" })

export const BillingDto = Schema.Struct({
  organization_id: Uuid,
  currency: Schema.Literal("USD"),
  status: Schema.Literal("unlimited", "trial", "active", "exhausted"),
  balances: Schema.Struct({
    credit_micros: Micros,
    plan_micros: Micros,
    spendable_micros: Micros,
    trial_micros: Micros
  }),
  card_check: Schema.Struct({ required: Schema.Boolean, verified_at: NullableTimestamp }),
  credit_spent_this_month_micros: Micros,
  exhausted_since: NullableTimestamp,
  limits: LimitsDto,
  minimum_balance_micros: Micros,
  spend_cap_micros: Schema.NullOr(Micros),
  payment_customer_linked: Schema.Boolean,
  payments_available: Schema.Boolean,
  plan: PlanDto,
  trial: Schema.Struct({
    active: Schema.Boolean,
    concurrent_machines: Schema.Int,
    ended_at: NullableTimestamp,
    max_hourly_micros: Micros,
    remaining_micros: Micros,
    remaining_seconds: Schema.Int,
    total_micros: Micros
  })
}).annotations({ identifier: "Billing" })

export const LedgerRowDto = Schema.Struct({
  id: Uuid,
  kind: Schema.Literal(...ledgerKinds),
  balance: Schema.Literal("trial", "plan", "credit"),
  amount_micros: Micros,
  balance_after_micros: Micros,
  description: Schema.String,
  machine_id: Schema.NullOr(Uuid),
  reference: Schema.NullOr(Schema.String),
  created_at: Timestamp
}).annotations({ identifier: "LedgerRow" })

export const AutoRefillDto = Schema.Struct({
  enabled: Schema.Boolean,
  credit_packs: Schema.Int,
  amount_micros: Micros,
  threshold_micros: Micros,
  monthly_cap_micros: Micros,
  charged_this_month_micros: Micros,
  consecutive_failures: Schema.Int,
  disabled_reason: Schema.NullOr(Schema.String),
  last_charge: Schema.NullOr(Schema.Struct({
    id: Schema.String,
    status: Schema.Literal("pending", "succeeded", "failed"),
    amount_micros: Micros,
    credit_packs: Schema.Int,
    failure_code: Schema.NullOr(Schema.String),
    created_at: Timestamp
  }))
}).annotations({ identifier: "AutoRefill" })

const SessionDto = Schema.Struct({ checkout_url: Schema.String, session_id: Schema.String })
export const CheckoutDto = SessionDto.annotations({ identifier: "Checkout" })
export const CardCheckSessionDto = SessionDto.annotations({ identifier: "CardCheckSession" })
export const PortalDto = Schema.Struct({ url: Schema.String }).annotations({ identifier: "Portal" })

export const InvoicePreviewDto = Schema.Struct({
  currency: Schema.Literal("USD"),
  period_start: Timestamp,
  period_end: Timestamp,
  usage_micros: Micros,
  unbilled_micros: Micros,
  next_charge_micros: Micros,
  credit_balance_micros: Micros,
  applied: Schema.Struct({ credit_micros: Micros, plan_micros: Micros, trial_micros: Micros }),
  plan: PlanDto,
  lines: Schema.Array(Schema.Struct({
    description: Schema.String,
    seconds: Schema.Int,
    hourly_micros: Micros,
    amount_micros: Micros,
    multiplier: Schema.Number,
    plan_id: Schema.NullOr(Schema.String),
    plan_version: Schema.NullOr(Schema.String)
  }))
}).annotations({ identifier: "InvoicePreview" })

const MachineUsage = Schema.Struct({
  machine_id: Uuid,
  name: Schema.NullOr(Schema.String),
  size: Schema.Literal("small", "default", "large"),
  seconds: Schema.Int,
  amount_micros: Micros
})

export const UsageDto = Schema.Struct({
  organization_id: Uuid,
  since: Timestamp,
  until: Timestamp,
  seconds: Schema.Int,
  amount_micros: Micros,
  machines: Schema.Array(MachineUsage)
}).annotations({ identifier: "Usage" })

export const MachineUsageDto = Schema.Struct({
  machine_id: Uuid,
  since: Timestamp,
  until: Timestamp,
  size: Schema.Literal("small", "default", "large"),
  seconds: Schema.Int,
  amount_micros: Micros
}).annotations({ identifier: "MachineUsage" })

const UsageQuery = Schema.Struct({
  since: Schema.optional(Schema.String.annotations({ description: "RFC 3339 start (inclusive)" })),
  until: Schema.optional(Schema.String.annotations({ description: "RFC 3339 end (exclusive)" }))
})

const PatchBillingRequest = RequestBody({
  minimum_balance_micros: Schema.optional(Schema.NullOr(SetMicros)),
  spend_cap_micros: Schema.optional(Schema.NullOr(SetMicros))
})

const CheckoutRequest = RequestBody({
  credit_packs: Schema.optional(Schema.NullOr(CreditPacks)),
  plan: Schema.optional(Schema.NullOr(PlanName)),
  end_trial: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

const AutoRefillRequest = RequestBody({
  credit_packs: CreditPacks,
  enabled: Schema.Boolean,
  monthly_cap_micros: SetMicros,
  threshold_micros: SetMicros
})

const OperatorFields = {
  operator: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  reason: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(500))
}

const CreditGrantRequest = RequestBody({
  organization_id: Uuid,
  amount_micros: Schema.Int.pipe(Schema.between(1, 1e12)),
  ...OperatorFields
})

const TrialGrantRequest = RequestBody({
  organization_id: Uuid,
  trial_micros: Schema.optional(Schema.Int.pipe(Schema.between(1, 1e12))),
  trial_days: Schema.optional(Schema.Int.pipe(Schema.between(1, 3650))),
  ...OperatorFields
})

/**
 * The envelope of a Stripe event, as Stripe documents it: the signature is checked over the raw
 * body, this only keeps the door's rule (a member nobody named is refused).
 */
const StripeEventBody = RequestBody({
  id: Schema.optional(Schema.String),
  object: Schema.optional(Schema.String),
  account: Schema.optional(Schema.String),
  api_version: Schema.optional(Schema.NullOr(Schema.String)),
  context: Schema.optional(Schema.String),
  created: Schema.optional(Schema.Number),
  data: Schema.optional(Schema.Unknown),
  livemode: Schema.optional(Schema.Boolean),
  pending_webhooks: Schema.optional(Schema.Number),
  request: Schema.optional(Schema.Unknown),
  type: Schema.optional(Schema.String)
})

const reader = policy("R", "header", Roles.anyMember)
const managers = policy("F", "header", Roles.billingManagers)
const operator = policy("O")

export class BillingApi extends HttpApiGroup.make("billing")
  .add(
    Endpoint.get("get", "/v1/billing", {
      summary: "Get the organization's billing",
      description: "Balances, plan, trial, card check, limits and settings. With `unlimited` billing the status is " +
        "`unlimited`, balances are zero and payments are not available.",
      policy: reader
    }).addSuccess(BillingDto)
  )
  .add(
    Endpoint.patch("update", "/v1/billing", {
      summary: "Change the minimum balance and the monthly spend cap",
      description: "`minimum_balance_micros` keeps that much unspent (machines stop when spendable reaches it); " +
        "`spend_cap_micros` caps the credit usage may take each UTC month (null removes the cap).",
      policy: managers
    }).setPayload(PatchBillingRequest).addSuccess(BillingDto)
  )
  .add(
    Endpoint.post("checkout", "/v1/billing/checkout", {
      summary: "Start a checkout for credit packs or a plan",
      description: "Credit packs are $20 each (1-50); a plan is `starter`, `pro`, `team` or `scale`; `end_trial` " +
        "with a plan forfeits the remaining trial once the plan's first payment is confirmed. Exactly one of " +
        "`credit_packs` and `plan`. Answers the hosted page to send the buyer to.",
      policy: managers,
      errors: paymentErrors
    }).setPayload(CheckoutRequest).addSuccess(CheckoutDto, { status: 201 })
  )
  .add(
    Endpoint.post("portal", "/v1/billing/portal", {
      summary: "Open the payment provider's billing portal",
      description: "Invoices, payment methods and the subscription at the payment provider. Needs a customer " +
        "linked by a first purchase (409 `billing_customer_missing`).",
      policy: managers,
      errors: [BillingCustomerMissing, ...paymentErrors]
    }).addSuccess(PortalDto, { status: 201 })
  )
  .add(
    Endpoint.post("cardCheck", "/v1/billing/card-check", {
      summary: "Start a card verification",
      description: "A hosted card verification that does not charge the card; once it completes, " +
        "`card_check.verified_at` is set and trial machines may run.",
      policy: managers,
      errors: paymentErrors
    }).addSuccess(CardCheckSessionDto, { status: 201 })
  )
  .add(
    Endpoint.post("cancelSubscription", "/v1/billing/subscription/cancel", {
      summary: "Cancel the plan at the end of its period",
      description: "The plan stays active until `plan.period_end`, then ends; `cancel_at_period_end` is set.",
      policy: managers,
      errors: [SubscriptionMissing, ...paymentErrors]
    }).addSuccess(BillingDto)
  )
  .add(
    Endpoint.post("resumeSubscription", "/v1/billing/subscription/resume", {
      summary: "Keep a cancelled plan renewing",
      description: "Undoes a cancellation before the period ends (409 `subscription_missing` once it ended).",
      policy: managers,
      errors: [SubscriptionMissing, ...paymentErrors]
    }).addSuccess(BillingDto)
  )
  .add(
    Endpoint.post("endTrial", "/v1/billing/trial/end", {
      summary: "End the trial now",
      description: "Forfeits the remaining trial balance (a `trial_forfeit` ledger row); it cannot be restored. " +
        "Ending an ended trial changes nothing.",
      policy: managers
    }).addSuccess(BillingDto)
  )
  .add(
    Endpoint.get("getAutoRefill", "/v1/billing/auto-refill", {
      summary: "Get the automatic refill",
      description: "Whether credit is bought automatically when it falls below the threshold, and how it went.",
      policy: reader
    }).addSuccess(AutoRefillDto)
  )
  .add(
    Endpoint.put("setAutoRefill", "/v1/billing/auto-refill", {
      summary: "Set the automatic refill",
      description: "When credit falls below `threshold_micros`, `credit_packs` packs are charged off-session, at " +
        "most `monthly_cap_micros` a UTC month (at least one refill's amount). Enabling needs payments, a linked " +
        "customer and a default payment method, and clears the failure count; three failures in a row turn it off.",
      policy: managers,
      errors: [BillingCustomerMissing, PaymentMethodMissing, ...paymentErrors]
    }).setPayload(AutoRefillRequest).addSuccess(AutoRefillDto)
  )
  .add(
    Endpoint.get("invoicePreview", "/v1/billing/invoice-preview", {
      summary: "Preview this period's invoice",
      description: "One line per plan and size used this period, then how trial, plan and credit cover it.",
      policy: reader
    }).addSuccess(InvoicePreviewDto)
  )
  .add(
    Endpoint.get("ledger", "/v1/billing/ledger", {
      summary: "List the wallet's movements",
      description: "Every change of the trial, plan and credit balances, newest first; each balance's rows add " +
        "up to it.",
      policy: reader
    })
      .setUrlParams(Schema.Struct(pageFields(Schema.String)))
      .addSuccess(
        Schema.Struct({ items: Schema.Array(LedgerRowDto), next_cursor: Schema.NullOr(Schema.String) })
          .annotations({ identifier: "LedgerPage" })
      )
  )
  .add(
    Endpoint.get("usage", "/v1/usage", {
      summary: "Get the organization's usage",
      description: "Running seconds and their price per machine between `since` and `until` (default: the plan's " +
        "period, or else the UTC month). With `unlimited` billing the amounts are list prices, for information.",
      policy: reader
    }).setUrlParams(UsageQuery).addSuccess(UsageDto)
  )
  .add(
    Endpoint.get("machineUsage", "/v1/machines/:machine_id/usage", {
      summary: "Get a machine's usage",
      description: "The machine's running seconds and their price between `since` and `until` (default as " +
        "`GET /v1/usage`).",
      policy: reader,
      errors: [ResourceNotFound]
    }).setPath(Schema.Struct({ machine_id: Uuid })).setUrlParams(UsageQuery).addSuccess(MachineUsageDto)
  )
  .add(
    Endpoint.post("stripeWebhook", "/v1/billing/stripe/webhook", {
      summary: "Receive Stripe's events",
      description: "Stripe's signed events (`Stripe-Signature`, 300 s tolerance); a bad signature answers 400 and " +
        "changes nothing. Each event id is applied once; a repeat answers 200.",
      policy: policy("N"),
      errors: [InvalidSignature, ...paymentErrors]
    }).setPayload(StripeEventBody).addSuccess(Schema.Struct({ received: Schema.Boolean }))
  )
  .add(
    Endpoint.post("grantCredits", "/v1/operator/billing/credits", {
      summary: "Grant credit to an organization (operators)",
      description: "Adds `amount_micros` to the credit balance (a `credit_grant` row whose reference is the " +
        "operator), written to the audit log with the reason.",
      policy: operator,
      errors: [ResourceNotFound]
    }).setPayload(CreditGrantRequest).addSuccess(BillingDto)
  )
  .add(
    Endpoint.post("grantTrial", "/v1/operator/billing/grants", {
      summary: "Grant trial money or days (operators)",
      description: "Adds `trial_micros` and/or `trial_days` to the trial; an ended trial restarts with them. " +
        "Written to the audit log with the reason.",
      policy: operator,
      errors: [ResourceNotFound]
    }).setPayload(TrialGrantRequest).addSuccess(BillingDto)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Billing: balances, plans, payments, usage and the wallet's ledger.")
{}
