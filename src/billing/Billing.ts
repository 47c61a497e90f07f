/**
 * Billing's reads and settings: the account as BillingDto shows it, the ledger, usage, the invoice
 * preview, the trial's end, the operator's grants (audited in the same transaction), and the time
 * rules a tick applies (trial expiry, a cancelled plan's period end). Payments live in Purchases.ts.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AuditLog } from "../kernel/AuditLog.js"
import { AppConfig, type PlanTier } from "../kernel/config/AppConfig.js"
import { InvalidRequest, ResourceNotFound } from "../kernel/http/Errors.js"
import { paginate } from "../kernel/http/Pagination.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { Limits } from "../limits/Limits.js"
import { Organizations } from "../organizations/Organizations.js"
import { EngineReads } from "../runtime/EngineReads.js"
import { Accounts } from "./Accounts.js"
import { operatorGrants } from "./Grants.js"
import { creditUsable, hourStart, monthOf, onTrialRules, spendable, trialActive } from "./Money.js"
import { makeNotices, trialWarningMillis } from "./Notices.js"
import { type AccountRow, BillingRepo, type UsageSum } from "./Repo.js"

export interface Settings {
  readonly minimum_balance_micros?: number | null | undefined
  readonly spend_cap_micros?: number | null | undefined
}

export type { Operator } from "./Grants.js"

/** The UTC calendar month holding `at`: the usage period without a plan. */
const monthBounds = (at: number) => {
  const date = new Date(at)
  return {
    since: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1),
    until: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)
  }
}

const parseTime = (field: string, value: string | undefined) =>
  Effect.suspend(() => {
    if (value === undefined) return Effect.succeed(undefined)
    const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value) ? Date.parse(value) : NaN
    return Number.isNaN(at)
      ? Effect.fail(new InvalidRequest({ field_errors: [{ field, message: "expected an RFC 3339 time" }] }))
      : Effect.succeed(at)
  })

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const accounts = yield* Accounts
  const repo = yield* BillingRepo
  const commit = yield* GroupCommit
  const limits = yield* Limits
  const audit = yield* AuditLog
  const { machines } = yield* EngineReads
  const organizations = yield* Organizations
  const notices = yield* makeNotices
  const prices = accounts.prices
  const paymentsAvailable = accounts.metered && config.stripe !== undefined

  const planActive = (account: AccountRow) => accounts.planOf(account) !== null

  const planDto = (account: AccountRow | null) => {
    const tier = account === null ? null : accounts.planOf(account)
    const plan = tier === null ? null : prices.plans[tier]
    return {
      active: tier !== null,
      cancel_at_period_end: account?.plan_cancel_at_period_end === 1,
      renews: tier !== null && account?.plan_renews === 1 && account.plan_cancel_at_period_end === 0,
      included_micros: plan?.included_micros ?? 0,
      included_seconds: plan === null ? 0 : Math.floor(plan.included_micros * 3600 / prices.hourly_micros.default),
      price_micros: plan?.price_micros ?? 0,
      period_start: tier === null ? null : account?.plan_period_start ?? null,
      period_end: tier === null ? null : account?.plan_period_end ?? null,
      tier
    }
  }

  /** The period usage and the invoice preview cover: the plan's, or else the UTC month. */
  const periodOf = (account: AccountRow | null, now: number) =>
    account !== null && planActive(account) && account.plan_period_start !== null &&
      account.plan_period_end !== null
      ? { since: account.plan_period_start, until: account.plan_period_end }
      : monthBounds(now)

  const view = (organizationId: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const limitsView = yield* limits.view(organizationId)
      if (!accounts.metered) {
        return {
          organization_id: organizationId,
          status: "unlimited" as const,
          account: null,
          now,
          limits: limitsView,
          plan: planDto(null),
          paymentsAvailable: false,
          cardRequired: false,
          spendable: 0,
          creditSpent: 0,
          trial: {
            active: false,
            concurrent_machines: 0,
            ended_at: null,
            max_hourly_micros: 0,
            remaining_micros: 0,
            remaining_seconds: 0,
            total_micros: 0
          }
        }
      }
      const account = yield* accounts.ensure(organizationId)
      const active = trialActive(account, now)
      const status = account.exhausted_since !== null
        ? "exhausted" as const
        : active && onTrialRules(account)
        ? "trial" as const
        : "active" as const
      return {
        organization_id: organizationId,
        status,
        account,
        now,
        limits: limitsView,
        plan: planDto(account),
        paymentsAvailable,
        cardRequired: accounts.cardRequired(account),
        spendable: spendable(account, now),
        creditSpent: account.spend_month === monthOf(now) ? account.credit_spent_micros : 0,
        trial: {
          active,
          concurrent_machines: prices.trial.concurrent_machines,
          ended_at: account.trial_ended_at ?? account.trial_ends_at,
          max_hourly_micros: prices.trial.max_hourly_micros,
          remaining_micros: account.trial_micros,
          remaining_seconds: active ? Math.ceil((account.trial_ends_at - now) / 1000) : 0,
          total_micros: account.trial_total_micros
        }
      }
    })

  /** Runs `change` durably, then stops the machines of an organization it left exhausted. */
  const durably = <A, E>(effect: Effect.Effect<A, E>) => commit.transaction(effect)

  /** Ends the trial now: its remainder is forfeited (a `trial_forfeit` row); a second end changes nothing. */
  const forfeitTrial = (account: AccountRow, now: number, why: string) =>
    Effect.gen(function*() {
      if (account.trial_ended_at !== null) return
      yield* accounts.post(account.organization_id, {
        kind: "trial_forfeit",
        balance: "trial",
        amount: -account.trial_micros,
        description: why
      })
      yield* repo.update(account.organization_id, { trial_ended_at: now, updated_at: now })
    })

  /** Operator routes name an organization by id: 404 when there is none. */
  const known = (organizationId: string) =>
    Effect.flatMap(organizations.findById(organizationId), (found) =>
      Option.isSome(found)
        ? Effect.void
        : Effect.fail(new ResourceNotFound({ detail: "Organization not found" })))

  return {
    view,
    periodOf,
    forfeitTrial,
    /** Ends the organization's plan: the rest of its balance expires (a ledger row) and the tier is cleared. */
    endPlan,
    durably,
    update: (organizationId: string, settings: Settings) =>
      Effect.zipRight(
        durably(Effect.gen(function*() {
          if (!accounts.metered) return
          yield* accounts.ensure(organizationId)
          const now = yield* Clock.currentTimeMillis
          yield* repo.update(organizationId, {
            ...(settings.minimum_balance_micros !== undefined
              ? { minimum_balance_micros: settings.minimum_balance_micros ?? 0 }
              : {}),
            ...(settings.spend_cap_micros !== undefined ? { spend_cap_micros: settings.spend_cap_micros } : {}),
            updated_at: now
          })
          yield* notices.settle(organizationId)
        })),
        view(organizationId)
      ),

    ledger: (organizationId: string, limit: number, cursor: string | null) =>
      paginate(
        limit,
        (n) => repo.ledger(organizationId, cursor === null ? null : Number(cursor), n),
        (row) => String(row.seq)
      ),

    endTrial: (organizationId: string) =>
      Effect.zipRight(
        durably(Effect.gen(function*() {
          if (!accounts.metered) return
          const account = yield* accounts.ensure(organizationId)
          yield* forfeitTrial(account, yield* Clock.currentTimeMillis, "Trial ended by the organization")
          yield* notices.settle(organizationId)
        })),
        view(organizationId)
      ),

    usage: (organizationId: string, query: { since?: string | undefined; until?: string | undefined }) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const account = accounts.metered ? yield* accounts.ensure(organizationId) : null
        const period = periodOf(account, now)
        const since = (yield* parseTime("since", query.since)) ?? period.since
        const until = (yield* parseTime("until", query.until)) ?? period.until
        if (since > until) {
          return yield* new InvalidRequest({ field_errors: [{ field: "since", message: "since is after until" }] })
        }
        return { since, until }
      }),

    /** Usage is kept per hour: the hours that start in [since rounded down, until). */
    usageRows: (organizationId: string, since: number, until: number, machineId: string | null) =>
      Effect.gen(function*() {
        const rows = yield* repo.usageByMachine(organizationId, hourStart(since), until, machineId)
        const named = yield* machines.namesAndCreators([...new Set(rows.map((row) => row.machine_id))])
        return rows.map((row): UsageSum => ({ ...row, name: named.get(row.machine_id)?.name ?? null }))
      }),

    machineSize: (organizationId: string, machineId: string) =>
      Effect.flatMap(machines.findIn(organizationId, machineId), (found) =>
        Option.match(found, {
          onNone: () => Effect.fail(new ResourceNotFound({ detail: "Machine not found" })),
          onSome: (machine) => Effect.succeed(machine.size)
        })),

    invoicePreview: (organizationId: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const account = accounts.metered ? yield* accounts.ensure(organizationId) : null
        const period = periodOf(account, now)
        const lines = yield* repo.usageLines(organizationId, period.since, period.until)
        const usage = lines.reduce((sum, line) => sum + line.amount_micros, 0)
        const applied = { credit_micros: 0, plan_micros: 0, trial_micros: 0 }
        if (account !== null) {
          const rows = yield* repo.ledger(organizationId, null, 10_000)
          for (const row of rows) {
            if (row.kind !== "usage" || row.created_at < period.since || row.created_at >= period.until) continue
            applied[`${row.balance}_micros`] -= row.amount_micros
          }
        }
        const plan = planDto(account)
        return {
          period,
          account,
          usage,
          applied,
          plan,
          nextCharge: plan.renews ? plan.price_micros : 0,
          unbilled: Math.max(0, usage - applied.trial_micros - applied.plan_micros),
          lines
        }
      }),

    ...operatorGrants({ accounts, audit, durably, known, notices, repo, trialDays: prices.trial.days, view }),

    /**
     * The time rules due by now, each account in its own transaction: an expired trial is forfeited,
     * a plan cancelled at its period's end ends (its allowance expires). Answers the organizations
     * they left exhausted.
     */
    applyDueRules: Effect.gen(function*() {
      if (!accounts.metered) return []
      const now = yield* Clock.currentTimeMillis
      const due = yield* repo.due(now, now + trialWarningMillis)
      const exhausted: Array<string> = []
      for (const account of due) {
        const newly = yield* durably(Effect.gen(function*() {
          if (
            account.trial_ended_at === null && account.paid_at === null && account.trial_warned_at === null &&
            account.trial_ends_at > now
          ) {
            yield* repo.update(account.organization_id, { trial_warned_at: now, updated_at: now })
            yield* notices.trialEnding(account.organization_id, account.trial_ends_at)
          }
          if (account.trial_ended_at === null && account.trial_ends_at <= now) {
            yield* forfeitTrial(account, now, "Trial expired")
          }
          if (
            account.plan_period_end !== null && account.plan_period_end <= now && planActive(account) &&
            account.plan_cancel_at_period_end === 1
          ) {
            yield* endPlan(account, now)
          }
          return yield* notices.settle(account.organization_id)
        }))
        if (newly) exhausted.push(account.organization_id)
      }
      return exhausted
    }),

    /**
     * Each member's usage this UTC month: the running time of the machines they created, priced
     * (`MemberDto.usage_this_month`); members without any are absent.
     */
    usageThisMonthByMember: (organizationId: string) =>
      Effect.gen(function*() {
        const { since, until } = monthBounds(yield* Clock.currentTimeMillis)
        const rows = yield* repo.usageByMachineTotal(organizationId, since, until)
        const machinesOf = yield* machines.namesAndCreators(rows.map((row) => row.machine_id))
        const byMember = new Map<string, { cost_micros: number; seconds: number }>()
        for (const row of rows) {
          const creator = machinesOf.get(row.machine_id)?.created_by
          if (creator === undefined) continue
          const sum = byMember.get(creator) ?? { cost_micros: 0, seconds: 0 }
          byMember.set(creator, {
            cost_micros: sum.cost_micros + Number(row.amount_micros),
            seconds: sum.seconds + Number(row.seconds)
          })
        }
        return byMember
      }),

    /** What the credit balance may still pay this month (for the DTO). */
    creditUsable
  }

  function endPlan(account: AccountRow, now: number) {
    return Effect.gen(function*() {
      yield* accounts.post(account.organization_id, {
        kind: "plan_expiry",
        balance: "plan",
        amount: -account.plan_micros,
        description: `Plan ${account.plan_tier} ended`
      })
      yield* repo.update(account.organization_id, {
        plan_tier: null,
        plan_renews: 0,
        plan_cancel_at_period_end: 0,
        subscription_id: null,
        updated_at: now
      })
    })
  }
})

export type PlanName = PlanTier

export class Billing extends Context.Tag("svc/billing/Billing")<Billing, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Billing, make)
}
