/**
 * Billing's news for the organization's owners and billing members (the e-mail alerts
 * `billing_exhausted` and `trial_ending`), handed to the outbox port inside the transaction that
 * causes it, so a crash loses none and invents none.
 */
import { Clock, Effect } from "effect"
import { type DomainEvent, DomainEvents } from "../kernel/events/DomainEvents.js"
import { EventRecorders } from "../kernel/events/EventRecorders.js"
import { Accounts } from "./Accounts.js"

/** How long before the trial's end its owners are told. */
export const trialWarningMillis = 3 * 24 * 3600 * 1000

type BillingNotice = Extract<DomainEvent, { _tag: "BillingNotice" }>

export const makeNotices = Effect.gen(function*() {
  const accounts = yield* Accounts
  const recorders = yield* EventRecorders
  const bus = yield* DomainEvents

  /**
   * Records the notice in the caller's transaction and wakes the alert sender at once: its read of
   * the new rows waits for that transaction (SQLite's one connection is held until it ends).
   */
  const tell = (notice: BillingNotice) => Effect.zipRight(recorders.record([notice]), bus.deliver(notice))

  return {
    /** Accounts.settle, telling the organization when its balance has just run out. */
    settle: (organizationId: string) =>
      Effect.tap(accounts.settle(organizationId), (newly) =>
        newly
          ? Effect.flatMap(
            Clock.currentTimeMillis,
            (now) => tell({ _tag: "BillingNotice", type: "billing.exhausted", organizationId, at: now })
          )
          : Effect.void),
    /** The organization's balance has just run out (a caller that settles by itself, the meter). */
    exhausted: (organizationId: string) =>
      Effect.flatMap(
        Clock.currentTimeMillis,
        (now) => tell({ _tag: "BillingNotice", type: "billing.exhausted", organizationId, at: now })
      ),
    /** The trial of the organization ends at `endsAt`. */
    trialEnding: (organizationId: string, endsAt: number) =>
      tell({ _tag: "BillingNotice", type: "billing.trial_ending", organizationId, at: endsAt })
  }
})
