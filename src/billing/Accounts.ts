/**
 * The organizations' billing accounts and the one way a balance changes: `post`, which writes the
 * ledger row with the change, so each balance's rows add up to it. It fills the kernel's
 * Entitlements port (tier, limits, and the 402 refusals of machine changes). Its writes join the
 * caller's transaction; `ensure` opens its own when called outside one.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"
import {
  AppConfig,
  defaultPrices,
  type PlanTier,
  planTiers,
  type Tier,
  type TierLimits
} from "../kernel/config/AppConfig.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { Entitlements, type EntitlementsShape, type Standing } from "../kernel/Entitlements.js"
import { BalanceExhausted, CardVerificationRequired, TrialRestricted } from "../kernel/http/BillingErrors.js"
import { exhaustedSince, hourlyOf, onTrialRules, spendable } from "./Money.js"
import { type AccountRow, type BalanceName, BillingRepo, type LedgerKind } from "./Repo.js"

const day = 86_400_000

export interface Posting {
  readonly kind: LedgerKind
  readonly balance: BalanceName
  /** Signed: a charge is negative. */
  readonly amount: number
  readonly description: string
  readonly machineId?: string | null
  readonly reference?: string | null
}

export const isPlanTier = (value: string | null): value is PlanTier =>
  value !== null && (planTiers as ReadonlyArray<string>).includes(value)

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const repo = yield* BillingRepo
  const sql = yield* SqlClient.SqlClient
  const prices = config.prices ?? defaultPrices
  const metered = config.billing === "metered"

  const post = (organizationId: string, posting: Posting) =>
    Effect.gen(function*() {
      if (posting.amount === 0) return
      const now = yield* Clock.currentTimeMillis
      const after = yield* repo.addTo(organizationId, posting.balance, posting.amount)
      yield* repo.insertLedger({
        id: uuidv7(),
        organization_id: organizationId,
        kind: posting.kind,
        balance: posting.balance,
        amount_micros: posting.amount,
        balance_after_micros: after,
        description: posting.description,
        machine_id: posting.machineId ?? null,
        reference: posting.reference ?? null,
        created_at: now
      })
    })

  const newAccount = (organizationId: string, now: number): AccountRow => ({
    organization_id: organizationId,
    trial_micros: 0,
    plan_micros: 0,
    credit_micros: 0,
    trial_total_micros: metered ? prices.trial.total_micros : 0,
    trial_ends_at: now + Math.round(prices.trial.days * day),
    trial_ended_at: null,
    paid_at: null,
    minimum_balance_micros: 0,
    spend_cap_micros: null,
    spend_month: "",
    credit_spent_micros: 0,
    exhausted_since: null,
    trial_warned_at: null,
    card_verified_at: null,
    customer_id: null,
    plan_tier: null,
    subscription_id: null,
    plan_renews: 0,
    plan_cancel_at_period_end: 0,
    plan_period_start: null,
    plan_period_end: null,
    plan_end_trial: 0,
    refill_enabled: 0,
    refill_credit_packs: 1,
    refill_threshold_micros: 0,
    refill_monthly_cap_micros: 0,
    refill_month: "",
    refill_charged_micros: 0,
    refill_failures: 0,
    refill_disabled_reason: null,
    refill_pending: null,
    refill_last: null,
    created_at: now,
    updated_at: now
  })

  /** The organization's account, made on first touch with its trial grant (metered mode). */
  const ensure = (organizationId: string) =>
    Effect.gen(function*() {
      const found = yield* repo.find(organizationId)
      if (Option.isSome(found)) return found.value
      const now = yield* Clock.currentTimeMillis
      const made = yield* sql.withTransaction(Effect.gen(function*() {
        const row = newAccount(organizationId, now)
        if (yield* repo.insert(row)) {
          yield* post(organizationId, {
            kind: "trial_grant",
            balance: "trial",
            amount: row.trial_total_micros,
            description: `Trial: ${row.trial_total_micros} micros for ${prices.trial.days} days`
          })
        }
        return yield* repo.find(organizationId)
      }))
      return Option.getOrThrow(made)
    }).pipe(Effect.orDie)

  /**
   * After a balance changed: sets `exhausted_since` when spendable reached 0 (answers true, the
   * caller stops the machines once committed), clears it when a payment or grant made it positive.
   */
  const settle = (organizationId: string) =>
    Effect.gen(function*() {
      if (!metered) return false
      const account = yield* ensure(organizationId)
      const now = yield* Clock.currentTimeMillis
      const since = exhaustedSince(account, now)
      if (since === account.exhausted_since) return false
      yield* repo.update(organizationId, { exhausted_since: since, updated_at: now })
      return account.exhausted_since === null
    })

  const planOf = (account: Pick<AccountRow, "plan_tier">): PlanTier | null =>
    isPlanTier(account.plan_tier) ? account.plan_tier : null

  const limitsOf = (account: AccountRow): { tier: Tier; limits: TierLimits } => {
    const plan = planOf(account)
    if (plan !== null) return { tier: "paid", limits: prices.plans[plan] }
    if (!onTrialRules(account)) return { tier: "paid", limits: config.limits.paid }
    return {
      tier: "trial",
      limits: {
        concurrent_machines: Math.min(config.limits.trial.concurrent_machines, prices.trial.concurrent_machines),
        starts_per_hour: config.limits.trial.starts_per_hour
      }
    }
  }

  const standing = (organizationId: string) =>
    Effect.gen(function*() {
      if (!metered) {
        const result: Standing = { tier: "unlimited", plan: null, limits: config.limits.unlimited, status: "active" }
        return result
      }
      const account = yield* ensure(organizationId)
      const { limits, tier } = limitsOf(account)
      const result: Standing = {
        tier,
        plan: planOf(account),
        limits: { concurrent_machines: limits.concurrent_machines, starts_per_hour: limits.starts_per_hour },
        status: account.exhausted_since === null ? "active" : "exhausted"
      }
      return result
    })

  const cardRequired = (account: AccountRow) =>
    metered && config.stripe !== undefined && config.trialCardCheck === true && onTrialRules(account) &&
    account.card_verified_at === null

  const entitlements: EntitlementsShape = {
    tierOf: (organizationId) => Effect.map(standing(organizationId), (s) => s.tier),
    standing,
    subscriptionActive: (organizationId) =>
      Effect.map(
        repo.find(organizationId),
        (found) => Option.isSome(found) && found.value.subscription_id !== null && found.value.plan_renews === 1
      ),
    admit: (organizationId, admission) =>
      Effect.gen(function*() {
        if (!metered) return
        const account = yield* ensure(organizationId)
        const now = yield* Clock.currentTimeMillis
        if (account.exhausted_since !== null || spendable(account, now) <= 0) {
          return yield* new BalanceExhausted({
            detail: "The organization's balance is used up: buy credit or a plan to run machines again"
          })
        }
        if (cardRequired(account)) {
          return yield* new CardVerificationRequired({
            detail: "Verify a card (POST /v1/billing/card-check) before running machines on the trial"
          })
        }
        if (!onTrialRules(account)) return
        if (admission.size === "large") {
          return yield* new TrialRestricted({ detail: "The trial runs small and default machines only" })
        }
        const hourly = hourlyOf(prices, [...admission.runningSizes, admission.size])
        if (admission.boots && hourly > prices.trial.max_hourly_micros) {
          return yield* new TrialRestricted({
            detail: `The trial runs machines costing at most ${prices.trial.max_hourly_micros} micros an hour ` +
              `together; this boot would make ${hourly}`
          })
        }
      })
  }

  return { prices, metered, post, ensure, settle, standing, cardRequired, planOf, entitlements }
})

export class Accounts extends Context.Tag("svc/billing/Accounts")<Accounts, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Accounts, make)
}

/** Billing's accounts with the kernel's Entitlements port filled from them (src/App.ts KernelLive). */
export const AccountsLive = Layer.effect(Entitlements, Effect.map(Accounts, (accounts) => accounts.entitlements))
  .pipe(Layer.provideMerge(Accounts.layer), Layer.provide(BillingRepo.layer))
