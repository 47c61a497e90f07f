/**
 * The payment provider as a port, so another provider can be added beside Stripe
 * (src/billing/StripePayments.ts). `none` is the server without payments: every call answers
 * 501 `billing_unavailable`.
 */
import { Context, Effect, Layer } from "effect"
import type { PlanTier } from "../kernel/config/AppConfig.js"
import { BillingUnavailable, type InvalidSignature, type PaymentProviderError } from "./Errors.js"

export type Purpose = "credits" | "plan" | "card_check"

export interface CheckoutRequest {
  readonly organizationId: string
  readonly customerId: string
  readonly purpose: Purpose
  readonly creditPacks: number | null
  readonly plan: PlanTier | null
  readonly endTrial: boolean
  readonly amountMicros: number
}

/** A provider event once its signature verified, in the provider's own object shape. */
export interface ProviderEvent {
  readonly id: string
  readonly type: string
  readonly object: Record<string, any>
}

export type ProviderFailure = PaymentProviderError | BillingUnavailable

export interface PaymentsShape {
  readonly available: boolean
  readonly createCustomer: (organizationId: string) => Effect.Effect<string, ProviderFailure>
  readonly checkout: (request: CheckoutRequest) => Effect.Effect<{ url: string; id: string }, ProviderFailure>
  readonly portal: (customerId: string) => Effect.Effect<string, ProviderFailure>
  readonly setCancelAtPeriodEnd: (
    subscriptionId: string,
    cancel: boolean
  ) => Effect.Effect<"active" | "ended", ProviderFailure>
  readonly hasDefaultPaymentMethod: (customerId: string) => Effect.Effect<boolean, ProviderFailure>
  /** An off-session charge; `key` makes a repeat the same charge at the provider. */
  readonly charge: (request: {
    readonly organizationId: string
    readonly customerId: string
    readonly amountMicros: number
    readonly creditPacks: number
    readonly key: string
  }) => Effect.Effect<{ id: string; status: string }, ProviderFailure>
  readonly verify: (body: string, signature: string | undefined) => Effect.Effect<ProviderEvent, InvalidSignature>
}

export class Payments extends Context.Tag("svc/billing/Payments")<Payments, PaymentsShape>() {
  static readonly none = Layer.succeed(
    Payments,
    (() => {
      const unavailable = Effect.fail(new BillingUnavailable({ detail: "Payments are not configured on this server" }))
      return {
        available: false,
        createCustomer: () => unavailable,
        checkout: () => unavailable,
        portal: () => unavailable,
        setCancelAtPeriodEnd: () => unavailable,
        hasDefaultPaymentMethod: () => unavailable,
        charge: () => unavailable,
        verify: () => Effect.dieMessage("no payment provider: the webhook answers 501 before verifying")
      }
    })()
  )
}
