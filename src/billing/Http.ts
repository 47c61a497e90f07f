import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization } from "../kernel/http/CallerContext.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import { InvalidRequest } from "../kernel/http/Errors.js"
import { mapPage } from "../kernel/http/Pagination.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { Billing } from "./Billing.js"
import { Purchases } from "./Purchases.js"
import type { LedgerRow } from "./Repo.js"

type View = Effect.Effect.Success<ReturnType<Billing["Type"]["view"]>>

const billingDto = (view: View) => {
  const account = view.account
  return {
    organization_id: view.organization_id,
    currency: "USD" as const,
    status: view.status,
    balances: {
      credit_micros: account?.credit_micros ?? 0,
      plan_micros: account?.plan_micros ?? 0,
      spendable_micros: view.spendable,
      trial_micros: account?.trial_micros ?? 0
    },
    card_check: { required: view.cardRequired, verified_at: isoOrNull(account?.card_verified_at ?? null) },
    credit_spent_this_month_micros: view.creditSpent,
    exhausted_since: isoOrNull(account?.exhausted_since ?? null),
    limits: view.limits,
    minimum_balance_micros: account?.minimum_balance_micros ?? 0,
    spend_cap_micros: account?.spend_cap_micros ?? null,
    payment_customer_linked: account?.customer_id != null,
    payments_available: view.paymentsAvailable,
    plan: {
      ...view.plan,
      period_start: isoOrNull(view.plan.period_start),
      period_end: isoOrNull(view.plan.period_end)
    },
    trial: { ...view.trial, ended_at: isoOrNull(view.trial.ended_at) }
  }
}

const ledgerDto = (row: LedgerRow) => ({
  id: row.id,
  kind: row.kind,
  balance: row.balance,
  amount_micros: row.amount_micros,
  balance_after_micros: row.balance_after_micros,
  description: row.description,
  machine_id: row.machine_id,
  reference: row.reference,
  created_at: iso(row.created_at)
})

const refillDto = (view: Effect.Effect.Success<ReturnType<Purchases["Type"]["autoRefill"]>>) => ({
  ...view,
  last_charge: view.last_charge === null ? null : { ...view.last_charge, created_at: iso(view.last_charge.created_at) }
})

export const BillingHandlers = HttpApiBuilder.group(Api, "billing", (handlers) =>
  Effect.gen(function*() {
    const billing = yield* Billing
    const purchases = yield* Purchases
    const organizationId = Effect.map(currentOrganization, (organization) => organization.id)
    const withOrganization = <A, E, R>(f: (organizationId: string) => Effect.Effect<A, E, R>) =>
      Effect.flatMap(organizationId, f)
    return handlers
      .handle("get", () => withOrganization((org) => Effect.map(billing.view(org), billingDto)))
      .handle(
        "update",
        ({ payload }) => withOrganization((org) => Effect.map(billing.update(org, payload), billingDto))
      )
      .handle("checkout", ({ payload }) => withOrganization((org) => purchases.checkout(org, payload)))
      .handle("portal", () => withOrganization(purchases.portal))
      .handle("cardCheck", () => withOrganization(purchases.cardCheck))
      .handle("cancelSubscription", () => withOrganization((org) => Effect.map(purchases.cancel(org), billingDto)))
      .handle("resumeSubscription", () => withOrganization((org) => Effect.map(purchases.resume(org), billingDto)))
      .handle("endTrial", () => withOrganization((org) => Effect.map(billing.endTrial(org), billingDto)))
      .handle("getAutoRefill", () => withOrganization((org) => Effect.map(purchases.autoRefill(org), refillDto)))
      .handle(
        "setAutoRefill",
        ({ payload }) => withOrganization((org) => Effect.map(purchases.setAutoRefill(org, payload), refillDto))
      )
      .handle("invoicePreview", () =>
        withOrganization((org) =>
          Effect.map(billing.invoicePreview(org), (preview) => ({
            currency: "USD" as const,
            period_start: iso(preview.period.since),
            period_end: iso(preview.period.until),
            usage_micros: preview.usage,
            unbilled_micros: preview.unbilled,
            next_charge_micros: preview.nextCharge,
            credit_balance_micros: preview.account?.credit_micros ?? 0,
            applied: preview.applied,
            plan: {
              ...preview.plan,
              period_start: isoOrNull(preview.plan.period_start),
              period_end: isoOrNull(preview.plan.period_end)
            },
            lines: preview.lines.map((line) => ({
              description: `${line.size} machines (${line.price_basis})`,
              seconds: line.seconds,
              hourly_micros: line.hourly_micros,
              amount_micros: line.amount_micros,
              multiplier: line.multiplier_permille / 1000,
              plan_id: line.price_basis,
              plan_version: "1"
            }))
          }))
        ))
      .handle("ledger", ({ urlParams }) =>
        withOrganization((org) =>
          Effect.map(billing.ledger(org, urlParams.limit, urlParams.cursor ?? null), (page) =>
            mapPage(page, ledgerDto))
        ))
      .handle("usage", ({ urlParams }) =>
        withOrganization((org) =>
          Effect.gen(function*() {
            const { since, until } = yield* billing.usage(org, urlParams)
            const rows = yield* billing.usageRows(org, since, until, null)
            return {
              organization_id: org,
              since: iso(since),
              until: iso(until),
              seconds: rows.reduce((sum, row) =>
                sum + row.seconds, 0),
              amount_micros: rows.reduce((sum, row) => sum + row.amount_micros, 0),
              machines: rows
            }
          })
        ))
      .handle("machineUsage", ({ path, urlParams }) =>
        withOrganization((org) =>
          Effect.gen(function*() {
            const size = yield* billing.machineSize(org, path.machine_id)
            const { since, until } = yield* billing.usage(org, urlParams)
            const rows = yield* billing.usageRows(org, since, until, path.machine_id)
            return {
              machine_id: path.machine_id,
              since: iso(since),
              until: iso(until),
              size,
              seconds: rows.reduce((sum, row) => sum + row.seconds, 0),
              amount_micros: rows.reduce((sum, row) => sum + row.amount_micros, 0)
            }
          })
        ))
      .handle("stripeWebhook", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          // Stripe sends JSON; only a body read as text can be read again (the signature needs it).
          const contentType = request.headers["content-type"]?.toLowerCase() ?? "application/json"
          if (!contentType.includes("application/json")) {
            return yield* new InvalidRequest({
              field_errors: [{ field: "body", message: "expected application/json, as Stripe sends its events" }]
            })
          }
          const body = yield* Effect.orDie(request.text)
          return yield* purchases.receive(body, request.headers["stripe-signature"])
        }))
      .handle("grantCredits", ({ payload }) =>
        Effect.map(billing.grantCredit(payload.organization_id, payload.amount_micros, payload), billingDto))
      .handle("grantTrial", ({ payload }) =>
        Effect.map(billing.grantTrial(payload.organization_id, payload, payload), billingDto))
  })).pipe(buildWithOnly(Authorization, Billing, Purchases))
