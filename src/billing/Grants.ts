/**
 * The operator's grants of credit and trial (`/v1/operator/billing/...`): each posted to the ledger
 * and audited in one transaction, then answered as the organization's billing view.
 */
import { Clock, type Context, Effect } from "effect"
import type { AuditLog } from "../kernel/AuditLog.js"
import type { ResourceNotFound } from "../kernel/http/Errors.js"
import type { Accounts } from "./Accounts.js"
import type { makeNotices } from "./Notices.js"
import type { AccountRow, BillingRepo } from "./Repo.js"

const day = 86_400_000

export interface Operator {
  readonly operator: string
  readonly reason: string
}

/** What the grants use of Billing's service (Billing.ts builds them with its own). */
export interface GrantDeps<View> {
  readonly accounts: Context.Tag.Service<typeof Accounts>
  readonly audit: Context.Tag.Service<typeof AuditLog>
  readonly repo: Context.Tag.Service<typeof BillingRepo>
  readonly notices: Effect.Effect.Success<typeof makeNotices>
  readonly durably: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
  readonly known: (organizationId: string) => Effect.Effect<void, ResourceNotFound>
  readonly view: (organizationId: string) => Effect.Effect<View>
  readonly trialDays: number
}

/** A ledger entry a grant posts: `credit_grant` or `trial_grant`, its reference the operator. */
interface GrantEntry {
  readonly kind: "credit_grant" | "trial_grant"
  readonly balance: "credit" | "trial"
  readonly amount: number
  readonly description: string
}

export const operatorGrants = <View>(deps: GrantDeps<View>) => {
  /**
   * One grant: 404 for an unknown organization, then in one transaction `prepare` (answering the
   * entry), the ledger row, the notices and the audit row; answers the organization's view.
   */
  const grant = <E>(
    organizationId: string,
    by: Operator,
    prepare: (account: AccountRow) => Effect.Effect<GrantEntry, E>,
    detail: Record<string, number>
  ) =>
    Effect.zipRight(
      deps.known(organizationId),
      Effect.zipRight(
        deps.durably(Effect.gen(function*() {
          const entry = yield* prepare(yield* deps.accounts.ensure(organizationId))
          yield* deps.accounts.post(organizationId, { ...entry, reference: by.operator })
          yield* deps.notices.settle(organizationId)
          yield* deps.audit.record({
            actor: by.operator,
            actorKind: "operator",
            action: `billing.${entry.kind}`,
            organizationId,
            reason: by.reason,
            detail
          })
        })),
        deps.view(organizationId)
      )
    )

  return {
    /** Operator: adds credit (`credit_grant`, its reference the operator), audited with it. */
    grantCredit: (organizationId: string, amount: number, by: Operator) =>
      grant(organizationId, by, () =>
        Effect.succeed<GrantEntry>({
          kind: "credit_grant",
          balance: "credit",
          amount,
          description: `Credit granted: ${by.reason}`
        }), { amount_micros: amount }),

    /** Operator: adds trial money or days; an ended trial restarts with them. */
    grantTrial: (
      organizationId: string,
      given: { readonly trial_micros?: number | undefined; readonly trial_days?: number | undefined },
      by: Operator
    ) =>
      grant(organizationId, by, (account) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const restart = account.trial_ended_at !== null || account.trial_ends_at <= now
          const base = restart ? now : account.trial_ends_at
          const days = given.trial_days ?? (restart ? deps.trialDays : 0)
          yield* deps.repo.update(organizationId, {
            trial_ends_at: base + Math.round(days * day),
            trial_ended_at: null,
            trial_warned_at: null,
            trial_total_micros: account.trial_total_micros + (given.trial_micros ?? 0),
            updated_at: now
          })
          return {
            kind: "trial_grant",
            balance: "trial",
            amount: given.trial_micros ?? 0,
            description: `Trial granted: ${by.reason}`
          } satisfies GrantEntry
        }), { trial_micros: given.trial_micros ?? 0, trial_days: given.trial_days ?? 0 })
  }
}
