/**
 * The operator's grants of credit and trial (`/v1/operator/billing/...`): each posted to the ledger
 * and audited in one transaction, then answered as the organization's billing view.
 */
import { Clock, type Context, Effect } from "effect"
import type { AuditLog } from "../kernel/AuditLog.js"
import type { ResourceNotFound } from "../kernel/http/Errors.js"
import type { Accounts } from "./Accounts.js"
import type { makeNotices } from "./Notices.js"
import type { BillingRepo } from "./Repo.js"

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

export const operatorGrants = <View>(deps: GrantDeps<View>) => ({
  /** Operator: adds credit (`credit_grant`, its reference the operator), audited with it. */
  grantCredit: (organizationId: string, amount: number, by: Operator) =>
    Effect.zipRight(
      deps.known(organizationId),
      Effect.zipRight(
        deps.durably(Effect.gen(function*() {
          yield* deps.accounts.ensure(organizationId)
          yield* deps.accounts.post(organizationId, {
            kind: "credit_grant",
            balance: "credit",
            amount,
            description: `Credit granted: ${by.reason}`,
            reference: by.operator
          })
          yield* deps.notices.settle(organizationId)
          yield* deps.audit.record({
            actor: by.operator,
            actorKind: "operator",
            action: "billing.credit_grant",
            organizationId,
            reason: by.reason,
            detail: { amount_micros: amount }
          })
        })),
        deps.view(organizationId)
      )
    ),

  /** Operator: adds trial money or days; an ended trial restarts with them. */
  grantTrial: (
    organizationId: string,
    grant: { readonly trial_micros?: number | undefined; readonly trial_days?: number | undefined },
    by: Operator
  ) =>
    Effect.zipRight(
      deps.known(organizationId),
      Effect.zipRight(
        deps.durably(Effect.gen(function*() {
          const account = yield* deps.accounts.ensure(organizationId)
          const now = yield* Clock.currentTimeMillis
          const restart = account.trial_ended_at !== null || account.trial_ends_at <= now
          const base = restart ? now : account.trial_ends_at
          const days = grant.trial_days ?? (restart ? deps.trialDays : 0)
          yield* deps.repo.update(organizationId, {
            trial_ends_at: base + Math.round(days * day),
            trial_ended_at: null,
            trial_warned_at: null,
            trial_total_micros: account.trial_total_micros + (grant.trial_micros ?? 0),
            updated_at: now
          })
          yield* deps.accounts.post(organizationId, {
            kind: "trial_grant",
            balance: "trial",
            amount: grant.trial_micros ?? 0,
            description: `Trial granted: ${by.reason}`,
            reference: by.operator
          })
          yield* deps.notices.settle(organizationId)
          yield* deps.audit.record({
            actor: by.operator,
            actorKind: "operator",
            action: "billing.trial_grant",
            organizationId,
            reason: by.reason,
            detail: { trial_micros: grant.trial_micros ?? 0, trial_days: grant.trial_days ?? 0 }
          })
        })),
        deps.view(organizationId)
      )
    )
})
