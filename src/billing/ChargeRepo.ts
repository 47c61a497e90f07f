/**
 * The meter's charges, posted in SQL. A tick or a settle fills `billing_meter_charges` with what each
 * organization's runs cost since its mark; `post` takes each from its account by the rules of
 * Money.ts (trial, then plan, then credit; the spend cap; exhaustion), writing a ledger row per
 * balance touched with the balances, in the caller's transaction. The rules are Money's, written
 * again in SQL so a tick of a thousand organizations reads none of them into JavaScript;
 * test/billing/charges.test.ts checks the SQL against them over hundreds of generated accounts.
 */
import { Context, Effect, Layer } from "effect"
import type { Prices } from "../kernel/config/AppConfig.js"
import { planTiers } from "../kernel/config/AppConfig.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { greatest, least } from "../kernel/sql/Portable.js"
import { Prepared } from "../kernel/sql/Sqlite.js"
import { monthOf, permilleOf } from "./Money.js"

/**
 * What pays for the usage of the organization whose account is `a` (none: unlimited), as Accounts
 * `planOf` and Money `onTrialRules` say: its plan, else the trial's rules until the first payment,
 * else credit.
 */
export const basisOf = (a: string) =>
  `CASE WHEN ${a}.organization_id IS NULL THEN 'unlimited'
    WHEN ${a}.plan_tier IN (${planTiers.map((tier) => `'${tier}'`).join(", ")}) THEN ${a}.plan_tier
    WHEN ${a}.paid_at IS NULL THEN 'trial' ELSE 'credit' END`

/** The share of the list price, in ‰, that the organization whose account is `a` pays (see `basisOf`). */
export const permilleFor = (a: string, prices: Prices) =>
  `CASE ${
    planTiers.map((tier) => `WHEN ${a}.plan_tier = '${tier}' THEN ${permilleOf(prices.plans[tier].multiplier)}`).join(
      " "
    )
  } ELSE 1000 END`

/**
 * One row per organization a tick or settle charges (a scratch table: this connection's, emptied by
 * `clear` in the same transaction, which makes it first: `Prepared.scratch`). Filled with `amount` (micros), `seconds` and `machines` (how many
 * runs had a whole second, and one of them), and what its mark had charged of the spans a stop
 * closed; `post` adds the parts taken and the account's spend and exhaustion after them.
 */
export const chargesTable = "billing_meter_charges"

export const createCharges = `CREATE TEMP TABLE IF NOT EXISTS ${chargesTable} (
  organization_id TEXT PRIMARY KEY,
  amount BIGINT NOT NULL DEFAULT 0,
  seconds BIGINT NOT NULL DEFAULT 0,
  machines INTEGER NOT NULL DEFAULT 0,
  machine_id TEXT,
  charged_micros BIGINT NOT NULL DEFAULT 0,
  charged_seconds BIGINT NOT NULL DEFAULT 0,
  trial_take BIGINT NOT NULL DEFAULT 0,
  plan_take BIGINT NOT NULL DEFAULT 0,
  credit_take BIGINT NOT NULL DEFAULT 0,
  spend_month TEXT,
  credit_spent_micros BIGINT,
  exhausted_before BIGINT,
  exhausted_since BIGINT,
  updated_at BIGINT
)`

/**
 * Each charge with the parts it takes and the account after them, one rule a layer (trial, plan and
 * credit taken in turn, the month's spend, Money's `creditUsable` and `exhaustedSince`); binds now
 * and its month.
 */
const takenLayers = `WITH args AS (SELECT CAST(? AS BIGINT) AS now_at, CAST(? AS TEXT) AS month),
  trial AS (
    SELECT c.organization_id, c.amount, a.trial_micros, a.plan_micros, a.credit_micros, a.minimum_balance_micros,
      a.spend_cap_micros, a.spend_month, a.credit_spent_micros, a.exhausted_since, a.updated_at, args.now_at, args.month,
      CASE WHEN c.amount > 0 THEN ${least("c.amount", greatest("0", "a.trial_micros"))} ELSE 0 END AS trial_take
    FROM ${chargesTable} c JOIN billing_accounts a ON a.organization_id = c.organization_id CROSS JOIN args),
  plan AS (
    SELECT trial.*,
      CASE WHEN amount > 0 THEN ${least("amount - trial_take", greatest("0", "plan_micros"))} ELSE 0 END AS plan_take
    FROM trial),
  credit AS (
    SELECT plan.*, CASE WHEN amount > 0 THEN amount - trial_take - plan_take ELSE 0 END AS credit_take FROM plan),
  spent AS (
    SELECT credit.*, trial_micros - trial_take AS trial_after, plan_micros - plan_take AS plan_after,
      credit_micros - credit_take AS credit_after,
      CASE WHEN credit_take > 0 THEN month ELSE spend_month END AS month_after,
      CASE WHEN credit_take > 0 THEN (CASE WHEN spend_month = month THEN credit_spent_micros ELSE 0 END) + credit_take
        ELSE credit_spent_micros END AS spent_after
    FROM credit),
  usable AS (
    SELECT spent.*, CASE WHEN spend_cap_micros IS NULL THEN credit_after ELSE ${
  least("credit_after", greatest("0", "spend_cap_micros - (CASE WHEN month_after = month THEN spent_after ELSE 0 END)"))
} END AS usable_after FROM spent),
  exhausted AS (
    SELECT usable.*, CASE WHEN trial_after + plan_after + usable_after - minimum_balance_micros > 0 THEN NULL
      ELSE coalesce(exhausted_since, now_at) END AS exhausted_after FROM usable)`

/** Of the three balances in charge order (`p.n`), what charge `c` takes, and account `a`'s balance before. */
const take = "CASE p.n WHEN 1 THEN c.trial_take WHEN 2 THEN c.plan_take ELSE c.credit_take END"
const before = "CASE p.n WHEN 1 THEN a.trial_micros WHEN 2 THEN a.plan_micros ELSE a.credit_micros END"

/**
 * The ledger rows of the charges: one per balance a charge took from, with the balance after it.
 * Their ids are made here in TypeScript (time-ordered, in this order), since PostgreSQL before 18
 * has no `uuidv7()`.
 */
const ledgerRows = `SELECT c.organization_id, p.balance, -(${take}) AS amount_micros,
    ${before} - ${take} AS balance_after_micros,
    'Running time: ' || c.seconds || ' s over ' || c.machines || ' machine' || CASE WHEN c.machines = 1 THEN '' ELSE 's' END
      AS description,
    CASE WHEN c.machines = 1 THEN c.machine_id END AS machine_id
  FROM ${chargesTable} c JOIN billing_accounts a ON a.organization_id = c.organization_id
  CROSS JOIN (SELECT 1 AS n, 'trial' AS balance UNION ALL SELECT 2, 'plan' UNION ALL SELECT 3, 'credit') p
  WHERE ${take} > 0 ORDER BY c.organization_id, p.n`

interface LedgerRow {
  readonly organization_id: string
  readonly balance: string
  readonly amount_micros: number
  readonly balance_after_micros: number
  readonly description: string
  readonly machine_id: string | null
}

const insertLedger = `INSERT INTO billing_ledger (id, organization_id, kind, balance, amount_micros,
  balance_after_micros, description, machine_id, reference, created_at) VALUES (?, ?, 'usage', ?, ?, ?, ?, ?, NULL, ?)`

const make = Effect.gen(function*() {
  const db = yield* Prepared
  const scratch = yield* db.scratch(createCharges)

  return {
    /** Makes this transaction's charges table: first, in each transaction that fills it. */
    scratch,
    /**
     * Posts the charges filled for this transaction: the parts taken (trial, plan, credit) as ledger
     * rows with the balances, the spend and exhaustion after them; answers the organizations that ran
     * out now. Charges of organizations without an account (unlimited mode) take nothing.
     */
    post: (now: number) =>
      Effect.gen(function*() {
        yield* db.run(
          `${takenLayers} UPDATE ${chargesTable} AS c SET trial_take = x.trial_take, plan_take = x.plan_take,
            credit_take = x.credit_take, spend_month = x.month_after, credit_spent_micros = x.spent_after,
            exhausted_before = x.exhausted_since, exhausted_since = x.exhausted_after,
            updated_at = CASE WHEN x.credit_take > 0 OR x.exhausted_after IS DISTINCT FROM x.exhausted_since
              THEN x.now_at ELSE x.updated_at END
            FROM exhausted x WHERE x.organization_id = c.organization_id`,
          now,
          monthOf(now)
        )
        const ledger = yield* db.all<LedgerRow>(ledgerRows)
        yield* db.runMany(
          insertLedger,
          ledger.map((row) => [
            uuidv7(),
            row.organization_id,
            row.balance,
            row.amount_micros,
            row.balance_after_micros,
            row.description,
            row.machine_id,
            now
          ])
        )
        yield* db.run(
          `UPDATE billing_accounts AS a SET trial_micros = a.trial_micros - c.trial_take,
            plan_micros = a.plan_micros - c.plan_take, credit_micros = a.credit_micros - c.credit_take,
            spend_month = c.spend_month, credit_spent_micros = c.credit_spent_micros,
            exhausted_since = c.exhausted_since, updated_at = c.updated_at
            FROM ${chargesTable} c WHERE c.organization_id = a.organization_id
              AND (c.trial_take + c.plan_take + c.credit_take > 0 OR c.updated_at <> a.updated_at)`
        )
        const exhausted = yield* db.all<{ organization_id: string }>(
          `SELECT organization_id FROM ${chargesTable}
            WHERE exhausted_before IS NULL AND exhausted_since IS NOT NULL ORDER BY organization_id`
        )
        return exhausted.map((row) => row.organization_id)
      }),
    /** Empties the charges, before the transaction that filled them ends. */
    clear: db.run(`DELETE FROM ${chargesTable}`)
  }
})

export class ChargeRepo
  extends Context.Tag("svc/billing/ChargeRepo")<ChargeRepo, Effect.Effect.Success<typeof make>>()
{
  static readonly layer = Layer.effect(ChargeRepo, make)
}
