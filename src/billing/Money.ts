/** The money rules as pure functions over integer micros (docs/billing.md). */
import type { Prices } from "../kernel/config/AppConfig.js"
import type { MachineSize } from "../kernel/domain/MachineStates.js"
import type { AccountRow } from "./Repo.js"

/** One micro of an hour's price per second is `hourly × permille / 3,600,000`: the meter's unit. */
export const meterUnit = 3_600_000

export const permilleOf = (multiplier: number) => Math.round(multiplier * 1000)

/**
 * What `seconds` at `hourly` × `permille`‰ cost with the fraction `carry` left from before: the whole
 * micros now, and the fraction (in meter units) carried to the next tick, so nothing is lost.
 */
export const meter = (seconds: number, hourly: number, permille: number, carry: number) => {
  const total = seconds * hourly * permille + carry
  const amount = Math.floor(total / meterUnit)
  return { amount, carry: total - amount * meterUnit }
}

/** The start of the UTC hour of `at`: usage is kept per hour. */
export const hourStart = (at: number) => at - (at % 3_600_000)

let lastMonth = { at: Number.NaN, month: "" }

/**
 * The UTC calendar month of `at`, `YYYY-MM`: the spend cap's and the refill cap's window. The last
 * answer is kept: a meter tick asks it of the same instant for every organization.
 */
export const monthOf = (at: number) => {
  if (at !== lastMonth.at) lastMonth = { at, month: new Date(at).toISOString().slice(0, 7) }
  return lastMonth.month
}

/** What spendable and exhaustion read of an account. */
export type Spendable = Pick<
  AccountRow,
  | "trial_micros"
  | "plan_micros"
  | "credit_micros"
  | "minimum_balance_micros"
  | "spend_cap_micros"
  | "spend_month"
  | "credit_spent_micros"
  | "exhausted_since"
>

/** Credit the spend cap still lets usage take this month (all of it without a cap). */
export const creditUsable = (account: Spendable, now: number) => {
  if (account.spend_cap_micros === null) return account.credit_micros
  const spent = account.spend_month === monthOf(now) ? account.credit_spent_micros : 0
  return Math.min(account.credit_micros, Math.max(0, account.spend_cap_micros - spent))
}

/** `max(0, trial + plan + usable credit − minimum balance)`. */
export const spendable = (account: Spendable, now: number) =>
  Math.max(
    0,
    account.trial_micros + account.plan_micros + creditUsable(account, now) - account.minimum_balance_micros
  )

/** When the account's balance ran out by `now` (kept from before, or `now`), or null while spendable is positive. */
export const exhaustedSince = (account: Spendable, now: number) =>
  spendable(account, now) > 0 ? null : account.exhausted_since ?? now

/** Whether the trial rules hold: until the first confirmed payment. */
export const onTrialRules = (account: Pick<AccountRow, "paid_at">) => account.paid_at === null

export const trialActive = (account: AccountRow, now: number) =>
  account.trial_ended_at === null && now < account.trial_ends_at

export const hourlyOf = (prices: Prices, sizes: ReadonlyArray<MachineSize>) =>
  sizes.reduce((sum, size) => sum + prices.hourly_micros[size], 0)
