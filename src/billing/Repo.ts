/** SQL for the billing area's tables: accounts, the ledger, meters, usage and applied provider events. */
import { Context, Effect, Layer, Option } from "effect"
import type { MachineSize } from "../kernel/domain/MachineStates.js"
import { Prepared } from "../kernel/sql/Sqlite.js"

export type BalanceName = "trial" | "plan" | "credit"

import type { LedgerKind } from "./LedgerKinds.js"
export { type LedgerKind, ledgerKinds } from "./LedgerKinds.js"

export interface AccountRow {
  readonly organization_id: string
  readonly trial_micros: number
  readonly plan_micros: number
  readonly credit_micros: number
  readonly trial_total_micros: number
  readonly trial_ends_at: number
  readonly trial_ended_at: number | null
  readonly paid_at: number | null
  readonly minimum_balance_micros: number
  readonly spend_cap_micros: number | null
  readonly spend_month: string
  readonly credit_spent_micros: number
  readonly exhausted_since: number | null
  readonly trial_warned_at: number | null
  readonly card_verified_at: number | null
  readonly customer_id: string | null
  readonly plan_tier: string | null
  readonly subscription_id: string | null
  readonly plan_renews: number
  readonly plan_cancel_at_period_end: number
  readonly plan_period_start: number | null
  readonly plan_period_end: number | null
  readonly plan_end_trial: number
  readonly refill_enabled: number
  readonly refill_credit_packs: number
  readonly refill_threshold_micros: number
  readonly refill_monthly_cap_micros: number
  readonly refill_month: string
  readonly refill_charged_micros: number
  readonly refill_failures: number
  readonly refill_disabled_reason: string | null
  readonly refill_pending: string | null
  readonly refill_last: string | null
  readonly created_at: number
  readonly updated_at: number
}

/** The columns a change may set; the balances only through `post` (a ledger row with each). */
export type AccountPatch = Partial<
  Omit<AccountRow, "organization_id" | "trial_micros" | "plan_micros" | "credit_micros" | "created_at">
>

export interface LedgerRow {
  readonly seq: number
  readonly id: string
  readonly organization_id: string
  readonly kind: LedgerKind
  readonly balance: BalanceName
  readonly amount_micros: number
  readonly balance_after_micros: number
  readonly description: string
  readonly machine_id: string | null
  readonly reference: string | null
  readonly created_at: number
}

export interface UsageRow {
  readonly organization_id: string
  readonly machine_id: string
  readonly size: MachineSize
  readonly price_basis: string
  readonly hour_start: number
  readonly seconds: number
  readonly hourly_micros: number
  readonly multiplier_permille: number
  readonly amount_micros: number
}

export interface UsageSum {
  readonly machine_id: string
  readonly name: string | null
  readonly size: MachineSize
  readonly seconds: number
  readonly amount_micros: number
}

export interface UsageLine {
  readonly price_basis: string
  readonly size: MachineSize
  readonly hourly_micros: number
  readonly multiplier_permille: number
  readonly seconds: number
  readonly amount_micros: number
}

/** Values per `IN (...)` list: few statement texts to keep prepared, few statements to run. */
const chunkSize = 64

const chunks = <A>(rows: ReadonlyArray<A>) =>
  rows.length <= chunkSize ? [rows] : Array.from(
    { length: Math.ceil(rows.length / chunkSize) },
    (_, i) => rows.slice(i * chunkSize, (i + 1) * chunkSize)
  )

const make = Effect.gen(function*() {
  const db = yield* Prepared
  return {
    find: (organizationId: string) =>
      db.first<AccountRow>("SELECT * FROM billing_accounts WHERE organization_id = ?", organizationId),
    /** Inserts the account unless one exists; answers whether this call made it. */
    insert: (row: AccountRow) =>
      Effect.map(
        db.run(
          `INSERT INTO billing_accounts (${Object.keys(row).join(", ")}) VALUES (${
            Object.keys(row).map(() => "?").join(", ")
          }) ON CONFLICT (organization_id) DO NOTHING`,
          ...Object.values(row)
        ),
        (changed) => changed === 1
      ),
    update: (organizationId: string, patch: AccountPatch) => {
      const keys = Object.keys(patch)
      if (keys.length === 0) return Effect.void
      return Effect.asVoid(db.run(
        `UPDATE billing_accounts SET ${keys.map((key) => `${key} = ?`).join(", ")} WHERE organization_id = ?`,
        ...(Object.values(patch) as ReadonlyArray<string | number | null>),
        organizationId
      ))
    },
    /** Adds `amount` (signed) to one balance and answers the balance after it. */
    addTo: (organizationId: string, balance: BalanceName, amount: number) =>
      Effect.map(
        db.all<{ after: number }>(
          `UPDATE billing_accounts SET ${balance}_micros = ${balance}_micros + ? WHERE organization_id = ?
            RETURNING ${balance}_micros AS after`,
          amount,
          organizationId
        ),
        (rows) => rows[0]?.after ?? 0
      ),
    insertLedger: (row: Omit<LedgerRow, "seq">) => db.insert("billing_ledger", row),
    /** Newest first, before `beforeSeq` when given. */
    ledger: (organizationId: string, beforeSeq: number | null, limit: number) =>
      db.all<LedgerRow>(
        `SELECT * FROM billing_ledger WHERE organization_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
        organizationId,
        beforeSeq ?? Number.MAX_SAFE_INTEGER,
        limit
      ),
    /** Each balance's rows added up (the ledger invariant: they equal the account's balances). */
    ledgerSums: (organizationId: string) =>
      db.all<{ balance: BalanceName; total: number }>(
        "SELECT balance, SUM(amount_micros) AS total FROM billing_ledger WHERE organization_id = ? GROUP BY balance",
        organizationId
      ),
    /** Accounts with a time rule that may be due by `now`: trial end, period end, refill, exhaustion. */
    /** Accounts with a time rule due by `now`, or a trial ending by `warnUntil` whose owners are not yet told. */
    due: (now: number, warnUntil: number = now) =>
      db.all<AccountRow>(
        `SELECT * FROM billing_accounts WHERE (trial_ended_at IS NULL AND trial_ends_at <= ?)
          OR (trial_ended_at IS NULL AND trial_warned_at IS NULL AND trial_ends_at <= ?)
          OR (plan_period_end IS NOT NULL AND plan_period_end <= ?)
          OR (refill_enabled = 1 AND refill_pending IS NULL AND credit_micros < refill_threshold_micros)`,
        now,
        warnUntil,
        now
      ),
    /** The organizations whose balance ran out (the worker stops what they still run). */
    exhausted: () =>
      Effect.map(
        db.all<{ organization_id: string }>(
          "SELECT organization_id FROM billing_accounts WHERE exhausted_since IS NOT NULL"
        ),
        (rows) => rows.map((row) => row.organization_id)
      ),
    /** Which of these organizations have an account. */
    withAccount: (organizationIds: ReadonlyArray<string>) =>
      Effect.map(
        Effect.forEach(
          chunks(organizationIds),
          (chunk) =>
            db.all<{ organization_id: string }>(
              `SELECT organization_id FROM billing_accounts WHERE organization_id IN (${
                chunk.map(() => "?").join(", ")
              })`,
              ...chunk
            )
        ),
        (pages) => pages.flat().map((row) => row.organization_id)
      ),
    /** Per machine of the organization, usage of the hours that start in [since, until) (names: Billing's). */
    usageByMachine: (organizationId: string, since: number, until: number, machineId: string | null) =>
      db.all<Omit<UsageSum, "name">>(
        `SELECT machine_id, size, SUM(seconds) AS seconds, SUM(amount_micros) AS amount_micros
          FROM billing_usage_hours
          WHERE organization_id = ? AND hour_start >= ? AND hour_start < ? AND (CAST(? AS TEXT) IS NULL OR machine_id = ?)
          GROUP BY machine_id, size ORDER BY machine_id`,
        organizationId,
        since,
        until,
        machineId,
        machineId
      ),
    /** Per machine of the organization, usage of the hours that start in [since, until), all sizes. */
    usageByMachineTotal: (organizationId: string, since: number, until: number) =>
      db.all<{ machine_id: string; seconds: number; amount_micros: number }>(
        `SELECT machine_id, SUM(seconds) AS seconds, SUM(amount_micros) AS amount_micros
          FROM billing_usage_hours
          WHERE organization_id = ? AND hour_start >= ? AND hour_start < ?
          GROUP BY machine_id`,
        organizationId,
        since,
        until
      ),
    /** The invoice's lines: per price basis and size used in [since, until). */
    usageLines: (organizationId: string, since: number, until: number) =>
      db.all<UsageLine>(
        `SELECT price_basis, size, hourly_micros, multiplier_permille, SUM(seconds) AS seconds,
          SUM(amount_micros) AS amount_micros FROM billing_usage_hours
          WHERE organization_id = ? AND hour_start >= ? AND hour_start < ?
          GROUP BY price_basis, size, hourly_micros, multiplier_permille ORDER BY price_basis, size`,
        organizationId,
        since,
        until
      ),
    /** Records a provider event's id; false when it was applied before (exactly once). */
    claimEvent: (id: string, type: string, now: number) =>
      Effect.map(
        db.run(
          "INSERT INTO billing_events (id, type, applied_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
          id,
          type,
          now
        ),
        (changed) => changed === 1
      ),
    byCustomer: (customerId: string) =>
      Effect.map(
        db.first<{ organization_id: string }>(
          "SELECT organization_id FROM billing_accounts WHERE customer_id = ?",
          customerId
        ),
        Option.map((row) => row.organization_id)
      )
  }
})

export class BillingRepo extends Context.Tag("svc/billing/BillingRepo")<
  BillingRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(BillingRepo, make)
}
