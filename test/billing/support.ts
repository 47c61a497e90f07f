/** Shared pieces of the billing tests: a metered service with small prices, running machines, the ledger's sums. */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Option } from "effect"
import { Accounts } from "../../src/billing/Accounts.js"
import { Billing } from "../../src/billing/Billing.js"
import { Meter } from "../../src/billing/Meter.js"
import { Purchases } from "../../src/billing/Purchases.js"
import { type AppConfigShape, defaultPrices, mergePrices, type Prices } from "../../src/kernel/config/AppConfig.js"
import { Machines } from "../../src/machines/Machines.js"
import { MachinesRepo } from "../../src/runtime/MachinesRepo.js"
import { newMachine, owner, services, until } from "../support/Services.js"

/** Prices where money runs out in seconds: small machines cost 3,600 micros an hour (one a second). */
export const cheapPrices = (override: Parameters<typeof mergePrices>[0] = {}): Prices =>
  mergePrices({
    hourly_micros: { small: 3_600, default: 7_200, large: 14_400, ...override.hourly_micros },
    trial: { total_micros: 1_000, ...override.trial },
    ...(override.plans === undefined ? {} : { plans: override.plans }),
    ...(override.credit_pack_micros === undefined ? {} : { credit_pack_micros: override.credit_pack_micros })
  })

export const billingServices = (overrides: Partial<AppConfigShape> = {}) =>
  Effect.gen(function*() {
    const context = yield* services({
      billing: "metered",
      prices: cheapPrices(),
      meterSeconds: 60,
      ...overrides
    })
    return {
      context,
      machines: Context.get(context, Machines),
      billing: Context.get(context, Billing),
      accounts: Context.get(context, Accounts),
      meter: Context.get(context, Meter),
      purchases: Context.get(context, Purchases),
      sql: Context.get(context, SqlClient.SqlClient),
      repo: Context.get(context, MachinesRepo),
      owner: (email: string) => owner(context, email)
    }
  })

export type BillingServices = Effect.Effect.Success<ReturnType<typeof billingServices>>

/** Creates a started machine and waits (in real time) until it runs. */
export const runningMachine = (
  s: BillingServices,
  requester: Effect.Effect.Success<ReturnType<BillingServices["owner"]>>,
  name: string,
  size: "small" | "default" | "large" = "small"
) =>
  Effect.gen(function*() {
    const accepted = yield* s.machines.create(requester, { ...newMachine(name, true), size })
    yield* until(Effect.map(
      s.repo.find(accepted.machine_id),
      (row) => Option.isSome(row) && row.value.state === "running" ? true : undefined
    ))
    return accepted.machine_id
  })

/** Each balance's ledger rows added up, with the account's balances beside them. */
export const ledgerInvariant = (s: BillingServices, organizationId: string) =>
  Effect.gen(function*() {
    const sums = yield* s.sql<{ balance: string; total: number }>`SELECT balance, SUM(amount_micros) AS total
      FROM billing_ledger WHERE organization_id = ${organizationId} GROUP BY balance`
    const account = yield* s.accounts.ensure(organizationId)
    const sum = (balance: string) => Number(sums.find((row) => row.balance === balance)?.total ?? 0)
    return {
      rows: { trial: sum("trial"), plan: sum("plan"), credit: sum("credit") },
      balances: { trial: account.trial_micros, plan: account.plan_micros, credit: account.credit_micros }
    }
  })

export { defaultPrices }
