/**
 * The meter's charges posted in SQL (ChargeRepo) against the money rules as the spec states them:
 * trial first, then the plan's allowance, the rest from credit (which may go below zero); credit
 * spent counts toward the month's spend cap; the account is exhausted exactly when Money's
 * `exhaustedSince` says so. Hundreds of generated accounts, edges included (negative balances, a
 * cap already reached, last month's spend, a zero charge that clears or keeps exhaustion).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, FastCheck, Layer } from "effect"
import { ChargeRepo } from "../../src/billing/ChargeRepo.js"
import { exhaustedSince, monthOf } from "../../src/billing/Money.js"
import { Prepared } from "../../src/kernel/sql/Sqlite.js"
import { billingServices } from "./support.js"

const now = Date.UTC(2026, 10, 24, 12)
const month = monthOf(now)

const caseOf = FastCheck.record({
  trial_micros: FastCheck.integer({ min: -50, max: 300 }),
  plan_micros: FastCheck.integer({ min: -50, max: 300 }),
  credit_micros: FastCheck.integer({ min: -300, max: 300 }),
  minimum_balance_micros: FastCheck.integer({ min: 0, max: 100 }),
  spend_cap_micros: FastCheck.option(FastCheck.integer({ min: 0, max: 400 }), { nil: null }),
  spend_month: FastCheck.constantFrom(month, "2026-10", ""),
  credit_spent_micros: FastCheck.integer({ min: 0, max: 400 }),
  exhausted_since: FastCheck.option(FastCheck.constant(now - 60_000), { nil: null }),
  amount: FastCheck.oneof(FastCheck.constant(0), FastCheck.integer({ min: 1, max: 600 })),
  machines: FastCheck.integer({ min: 0, max: 3 })
})
type Case = typeof caseOf extends FastCheck.Arbitrary<infer A> ? A : never

/** What the spec says a charge of `c.amount` does to the account. */
const expected = (c: Case) => {
  let left = Math.max(0, c.amount)
  const take = (balance: number) => {
    const taken = Math.min(left, Math.max(0, balance))
    left -= taken
    return taken
  }
  const parts = { trial: take(c.trial_micros), plan: take(c.plan_micros), credit: 0 }
  parts.credit = left
  const spent = parts.credit > 0
    ? { spend_month: month, credit_spent_micros: (c.spend_month === month ? c.credit_spent_micros : 0) + parts.credit }
    : { spend_month: c.spend_month, credit_spent_micros: c.credit_spent_micros }
  const after = {
    ...c,
    ...spent,
    trial_micros: c.trial_micros - parts.trial,
    plan_micros: c.plan_micros - parts.plan,
    credit_micros: c.credit_micros - parts.credit
  }
  const exhausted = exhaustedSince(after, now)
  return {
    parts,
    account: {
      trial_micros: after.trial_micros,
      plan_micros: after.plan_micros,
      credit_micros: after.credit_micros,
      spend_month: after.spend_month,
      credit_spent_micros: after.credit_spent_micros,
      exhausted_since: exhausted,
      updated_at: parts.credit > 0 || exhausted !== c.exhausted_since ? now : 1
    }
  }
}

describe("meter charges in SQL", () => {
  it.scoped("take trial, plan, then credit; count the spend; exhaust as Money says; a ledger row per part", () =>
    Effect.gen(function*() {
      const s = yield* billingServices()
      const charges = Context.get(
        yield* Layer.build(ChargeRepo.layer).pipe(Effect.provideService(Prepared, Context.get(s.context, Prepared))),
        ChargeRepo
      )
      const sql = s.sql
      const edge = { ...FastCheck.sample(caseOf, { numRuns: 1, seed: 1 })[0]!, spend_cap_micros: null }
      const cases = [
        ...FastCheck.sample(caseOf, { numRuns: 400, seed: 1124 }),
        // Spendable after the charge exactly zero: exhausted (from the trial, and at the minimum balance).
        { ...edge, trial_micros: 10, plan_micros: 0, credit_micros: 0, minimum_balance_micros: 0, amount: 10 },
        { ...edge, trial_micros: 0, plan_micros: 0, credit_micros: 50, minimum_balance_micros: 50, amount: 0 },
        { ...edge, trial_micros: 0, plan_micros: 0, credit_micros: 51, minimum_balance_micros: 50, amount: 0 }
      ]
      const ids = cases.map((_, i) => `org-${String(i).padStart(4, "0")}`)
      yield* Effect.forEach(cases, (c, i) =>
        Effect.gen(function*() {
          const id = ids[i]!
          yield* sql`INSERT INTO organizations (id, name, created_at) VALUES (${id}, 'charges', 0)`
          yield* s.accounts.ensure(id)
          yield* sql`UPDATE billing_accounts SET trial_micros = ${c.trial_micros}, plan_micros = ${c.plan_micros},
            credit_micros = ${c.credit_micros}, minimum_balance_micros = ${c.minimum_balance_micros},
            spend_cap_micros = ${c.spend_cap_micros}, spend_month = ${c.spend_month},
            credit_spent_micros = ${c.credit_spent_micros}, exhausted_since = ${c.exhausted_since}, updated_at = 1
            WHERE organization_id = ${id}`
        }), { discard: true })
      // The ensure calls wrote ledger rows of their own (a trial grant): only the charges' are compared.
      const { seq } = (yield* sql<{ seq: number }>`SELECT coalesce(MAX(seq), 0) AS seq FROM billing_ledger`)[0]!
      const exhausted = yield* sql.withTransaction(Effect.gen(function*() {
        yield* charges.scratch
        yield* Effect.forEach(
          cases,
          (c, i) =>
            sql`INSERT INTO billing_meter_charges (organization_id, amount, seconds, machines, machine_id)
            VALUES (${ids[i]!}, ${c.amount}, ${c.amount * 2}, ${c.machines}, ${`machine-${i}`})`,
          { discard: true }
        )
        const exhausted = yield* charges.post(now)
        yield* charges.clear
        return exhausted
      }))

      const accounts = yield* sql<Record<string, unknown>>`SELECT organization_id, trial_micros, plan_micros,
        credit_micros, spend_month, credit_spent_micros, exhausted_since, updated_at FROM billing_accounts
        WHERE organization_id LIKE 'org-%' ORDER BY organization_id`
      const ledger = yield* sql<Record<string, unknown>>`SELECT organization_id, kind, balance, amount_micros,
        balance_after_micros, description, machine_id, created_at FROM billing_ledger WHERE seq > ${seq} ORDER BY seq`
      const expectedLedger: Array<Record<string, unknown>> = []
      cases.forEach((c, i) => {
        const want = expected(c)
        const { organization_id, ...got } = accounts[i]!
        assert.strictEqual(organization_id, ids[i])
        assert.deepStrictEqual(
          Object.fromEntries(Object.entries(got).map(([k, v]) => [k, typeof v === "bigint" ? Number(v) : v])),
          want.account,
          `case ${i}: ${JSON.stringify(c)}`
        )
        const balances = { trial: c.trial_micros, plan: c.plan_micros, credit: c.credit_micros }
        for (const balance of ["trial", "plan", "credit"] as const) {
          if (want.parts[balance] === 0) continue
          expectedLedger.push({
            organization_id: ids[i],
            kind: "usage",
            balance,
            amount_micros: -want.parts[balance],
            balance_after_micros: balances[balance] - want.parts[balance],
            description: `Running time: ${c.amount * 2} s over ${c.machines} machine${c.machines === 1 ? "" : "s"}`,
            machine_id: c.machines === 1 ? `machine-${i}` : null,
            created_at: now
          })
        }
      })
      assert.deepStrictEqual(ledger, expectedLedger)
      assert.deepStrictEqual(
        exhausted,
        ids.filter((_, i) => cases[i]!.exhausted_since === null && expected(cases[i]!).account.exhausted_since !== null)
      )
      // The generated cases reach every branch: each part taken, exhaustion set, kept and cleared.
      const wants = cases.map(expected)
      assert.isTrue(wants.some((w) => w.parts.trial > 0 && w.parts.plan > 0 && w.parts.credit > 0))
      assert.isTrue(exhausted.length > 0)
      assert.isTrue(cases.some((c, i) => c.exhausted_since !== null && wants[i]!.account.exhausted_since === null))
      assert.isTrue(cases.some((c, i) => c.exhausted_since !== null && wants[i]!.account.exhausted_since !== null))
      assert.strictEqual((yield* sql`SELECT * FROM billing_meter_charges`).length, 0)
    }))
})
