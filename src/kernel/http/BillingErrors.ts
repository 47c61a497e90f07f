/**
 * The money answers a machine change can meet (api.md 402 rows, extensions.md §13): the kernel's
 * Entitlements port refuses with them, so the machine routes declare them without knowing billing.
 */
import { ProblemError } from "./Problem.js"

export class BalanceExhausted extends ProblemError<BalanceExhausted>()(
  "balance_exhausted",
  402,
  "The organization's balance is used up"
) {}

export class TrialRestricted
  extends ProblemError<TrialRestricted>()("trial_restricted", 402, "Not available during the trial")
{}

export class CardVerificationRequired extends ProblemError<CardVerificationRequired>()(
  "card_verification_required",
  402,
  "Verify a card before running machines on the trial"
) {}

/** Every refusal of `Entitlements.admit`. */
export const moneyErrors = [BalanceExhausted, TrialRestricted, CardVerificationRequired] as const
export type MoneyRefusal = BalanceExhausted | TrialRestricted | CardVerificationRequired
