/**
 * The meter: running time per machine in whole seconds, priced at its size's hourly price times the
 * multiplier of what pays for it, with the fraction of a micro carried per machine. Each tick moves
 * the machines' meters inside SQLite (each holds its machine's usage row of the hour being metered:
 * one row per machine per tick; no machine is read into JS) and posts the organizations' charges
 * (trial, then plan, then credit: ledger rows with the balances) from their sums, in one transaction
 * per batch of organizations, a few statements per batch, so a long tick never holds the event loop
 * and a crash keeps every batch whole or not at all. In `unlimited` mode the usage is recorded at
 * list prices and nothing is charged.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { Accounts, type Posting, type Postings } from "./Accounts.js"
import { exhaustedSince, meterUnit, monthOf, onTrialRules, permilleOf, split } from "./Money.js"
import { makeNotices } from "./Notices.js"
import { BillingRepo, type MeterBasis, type MeteredAccount, type MeterSum } from "./Repo.js"

/**
 * Machines metered in one transaction (whole organizations: a batch closes once it holds this many):
 * bounds how long one batch holds the event loop (about 25 ms on the 2-core host, 5,000 held it
 * 35 ms and once 200 ms under load), while each batch's commit and its few statements are paid four
 * times a tick of 10,000 machines (no measurable CPU against two batches).
 */
const machinesPerBatch = 2500

/** Organizations metered in one transaction, with how many machines they have to meter (see `MeterTarget`). */
interface Batch {
  readonly organizations: Array<string>
  machines: number
  unmetered: number
  stopped: number
}

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const repo = yield* BillingRepo
  const accounts = yield* Accounts
  const notices = yield* makeNotices
  const commit = yield* GroupCommit
  const prices = accounts.prices
  const intervalMs = (config.meterSeconds ?? 60) * 1000
  const lock = yield* Effect.makeSemaphore(1)

  /** What pays for usage now, and at which share of the list price. */
  const basisOf = (account: MeteredAccount | null) => {
    if (account === null) return { basis: "unlimited", permille: 1000 }
    const plan = accounts.planOf(account)
    if (plan !== null) return { basis: plan, permille: permilleOf(prices.plans[plan].multiplier) }
    return { basis: onTrialRules(account) ? "trial" : "credit", permille: 1000 }
  }

  /**
   * An organization's charge of what a batch metered for it (`sum`; none: nothing) as postings (trial,
   * then plan, then credit, a ledger row per balance touched) with the account's spend and exhaustion
   * after it; `exhausted` when it ran out now.
   */
  const charge = (account: MeteredAccount, sum: MeterSum | undefined, now: number) => {
    const { amount = 0, machine_id = null, machines: count = 0, seconds = 0 } = sum ?? {}
    const description = `Running time: ${seconds} s over ${count} machine${count === 1 ? "" : "s"}`
    const month = monthOf(now)
    let { credit_spent_micros, spend_month, updated_at } = account
    const balances = { trial: account.trial_micros, plan: account.plan_micros, credit: account.credit_micros }
    const postings: Array<Posting> = []
    for (const part of amount > 0 ? split(account, amount) : []) {
      postings.push({
        kind: "usage",
        balance: part.balance,
        amount: -part.amount,
        description,
        machineId: count === 1 ? machine_id : null
      })
      balances[part.balance] -= part.amount
      if (part.balance === "credit") {
        credit_spent_micros = (spend_month === month ? credit_spent_micros : 0) + part.amount
        spend_month = month
        updated_at = now
      }
    }
    const after: MeteredAccount = {
      ...account,
      trial_micros: balances.trial,
      plan_micros: balances.plan,
      credit_micros: balances.credit,
      spend_month,
      credit_spent_micros
    }
    const exhausted_since = exhaustedSince(after, now)
    if (exhausted_since !== account.exhausted_since) updated_at = now
    const entry: Postings = {
      account,
      postings,
      set: { spend_month, credit_spent_micros, exhausted_since, updated_at }
    }
    return {
      entry,
      changed: postings.length > 0 || updated_at !== account.updated_at,
      exhausted: exhausted_since !== null && account.exhausted_since === null
    }
  }

  /**
   * Meters a batch of organizations by `now` (their accounts read, every meter moved inside SQLite,
   * the charges posted); answers the ones that became exhausted. Machines with no whole second yet
   * are left for later.
   */
  const meterBatch = (batch: Batch, now: number, recentSince: number, machineId: string | null) =>
    Effect.gen(function*() {
      const found = accounts.metered ? yield* repo.accountsOf(batch.organizations) : []
      const accountOf = new Map(found.map((account) => [account.organization_id, account]))
      const basis: Array<MeterBasis> = []
      for (const organizationId of batch.organizations) {
        const account = accounts.metered
          ? accountOf.get(organizationId) ?? (yield* accounts.ensure(organizationId))
          : null
        if (account !== null) accountOf.set(organizationId, account)
        const { basis: price_basis, permille } = basisOf(account)
        basis.push({ organization_id: organizationId, price_basis, multiplier_permille: permille })
      }
      const sums = yield* repo.meter({
        now,
        recentSince,
        machineId,
        basis,
        unmetered: batch.unmetered > 0,
        costing: batch.machines - batch.stopped,
        stopped: batch.stopped > 0,
        hourly: prices.hourly_micros,
        unit: meterUnit
      })
      const sumOf = new Map(sums.map((sum) => [sum.organization_id, sum]))
      const exhausted: Array<string> = []
      const entries: Array<Postings> = []
      for (const account of accountOf.values()) {
        const charges = charge(account, sumOf.get(account.organization_id), now)
        if (charges.changed) entries.push(charges.entry)
        if (charges.exhausted) exhausted.push(account.organization_id)
      }
      yield* accounts.postMany(entries)
      for (const organizationId of exhausted) yield* notices.exhausted(organizationId)
      return exhausted
    })

  /**
   * Meters every machine with unmetered time by now (or only `machineId`: a stop); answers the
   * organizations that became exhausted, whose machines the caller stops, and how many machines
   * it found to meter (none: nothing runs or stopped lately). One run at a time: a stop's metering
   * waits for a tick in progress, which counted its machines before it metered them.
   */
  const run = (machineId: string | null = null) =>
    lock.withPermits(1)(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const recentSince = now - 2 * intervalMs
      const targets = yield* repo.meterTargets(recentSince, machineId)
      // Whole organizations a batch (one may come twice: costing and stopped machines).
      const batches: Array<Batch> = []
      const batchOf = new Map<string, Batch>()
      let machines = 0
      for (const row of targets) {
        let batch = batchOf.get(row.organization_id)
        if (batch === undefined) {
          batch = batches[batches.length - 1]
          if (batch === undefined || batch.machines >= machinesPerBatch) {
            batch = { organizations: [], machines: 0, unmetered: 0, stopped: 0 }
            batches.push(batch)
          }
          batch.organizations.push(row.organization_id)
          batchOf.set(row.organization_id, batch)
        }
        batch.machines += row.machines
        batch.unmetered += row.unmetered
        batch.stopped += row.stopped
        machines += row.machines
      }
      const exhausted: Array<string> = []
      for (const batch of batches) {
        // Not waiting for the flush: a batch lost to a crash is metered again by the next tick (its
        // meters did not move), and the next commit makes it durable anyway.
        const newly = yield* commit.applied(meterBatch(batch, now, recentSince, machineId))
        exhausted.push(...newly)
        // Lets requests in between batches.
        yield* Effect.yieldNow()
      }
      return { exhausted, machines }
    }))

  return { run, intervalMs }
})

export class Meter extends Context.Tag("svc/billing/Meter")<Meter, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Meter, make)
}
