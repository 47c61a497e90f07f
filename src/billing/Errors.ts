/** The billing area's errors (api.md "Billing, usage, limits" 409, 501 and 502 rows). */
import { ProblemError } from "../kernel/http/Problem.js"

export class BillingUnavailable extends ProblemError<BillingUnavailable>()(
  "billing_unavailable",
  501,
  "Payments are not configured on this server"
) {}

export class PaymentProviderError
  extends ProblemError<PaymentProviderError>()("payment_provider_error", 502, "The payment provider failed")
{}

export class BillingCustomerMissing extends ProblemError<BillingCustomerMissing>()(
  "billing_customer_missing",
  409,
  "No purchase has linked a payment customer yet"
) {}

export class PaymentMethodMissing extends ProblemError<PaymentMethodMissing>()(
  "payment_method_missing",
  409,
  "The payment customer has no default payment method"
) {}

export class SubscriptionMissing
  extends ProblemError<SubscriptionMissing>()("subscription_missing", 409, "No renewing subscription is linked")
{}

/** What every payment route can answer besides its own: not configured, or the provider failed. */
export const paymentErrors = [BillingUnavailable, PaymentProviderError] as const

export class InvalidSignature
  extends ProblemError<InvalidSignature>()("invalid_signature", 400, "The event's signature does not verify")
{}
