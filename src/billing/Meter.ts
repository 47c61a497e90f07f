/**
 * The meter: running time per machine in whole seconds, priced at its size's hourly price times the
 * multiplier of what pays for it, with the fraction of a micro carried per machine. Each tick writes
 * the machines' meters (each holds its machine's usage row of the hour being metered: one row per
 * machine per tick) and the organizations' charges (trial, then plan, then credit: ledger rows with
 * the balances) in one transaction per batch of organizations, a few statements per batch, so a
 * long tick never holds the event loop and a crash keeps every batch whole or not at all. In
 * `unlimited` mode the usage is recorded at list prices and nothing is charged.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { Accounts, type Posting, type Postings } from "./Accounts.js"
import { exhaustedSince, meter, monthOf, onTrialRules, permilleOf, split } from "./Money.js"
import { makeNotices } from "./Notices.js"
import { type AccountRow, BillingRepo, type MeterCandidate, type MeterWrite } from "./Repo.js"

/**
 * Machines metered in one transaction (whole organizations: a batch closes once it holds this many):
 * bounds how long one batch holds the event loop (30-60 ms on the loaded 2-core host; 2,000 reached
 * 107 ms once), while each commit, which writes every page its batch touched, is paid ten times a
 * tick of 10,000 machines rather than once per 50 organizations.
 */
const machinesPerBatch = 1000

const hourMs = 3_600_000

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
  const basisOf = (account: AccountRow | null) => {
    if (account === null) return { basis: "unlimited", permille: 1000 }
    const plan = accounts.planOf(account)
    if (plan !== null) return { basis: plan, permille: permilleOf(prices.plans[plan].multiplier) }
    return { basis: onTrialRules(account) ? "trial" : "credit", permille: 1000 }
  }

  /**
   * An organization's charge of `amount` as postings (trial, then plan, then credit, a ledger row per
   * balance touched) with the account's spend and exhaustion after it; `exhausted` when it ran out now.
   */
  const charge = (
    account: AccountRow,
    amount: number,
    machines: ReadonlyArray<string>,
    seconds: number,
    now: number
  ) => {
    const count = machines.length
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
        machineId: count === 1 ? machines[0]! : null
      })
      balances[part.balance] -= part.amount
      if (part.balance === "credit") {
        credit_spent_micros = (spend_month === month ? credit_spent_micros : 0) + part.amount
        spend_month = month
        updated_at = now
      }
    }
    const after: AccountRow = {
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
   * Meters a batch of organizations by `now` in a few statements (their accounts read, every meter
   * written, the charges posted); answers the ones that became exhausted. Machines with no whole
   * second yet are left for later.
   */
  const meterBatch = (batch: ReadonlyArray<readonly [string, ReadonlyArray<MeterCandidate>]>, now: number) =>
    Effect.gen(function*() {
      const found = accounts.metered ? yield* repo.accountsOf(batch.map(([organizationId]) => organizationId)) : []
      const accountOf = new Map(found.map((account) => [account.organization_id, account]))
      const exhausted: Array<string> = []
      const meters = {
        opened: [] as Array<MeterWrite>,
        continued: [] as Array<MeterWrite>,
        reopened: [] as Array<MeterWrite>
      }
      const entries: Array<Postings> = []
      for (const [organizationId, machines] of batch) {
        const account = accounts.metered
          ? accountOf.get(organizationId) ?? (yield* accounts.ensure(organizationId))
          : null
        const { basis, permille } = basisOf(account)
        let total = 0
        let seconds = 0
        const charged: Array<string> = []
        for (const machine of machines) {
          const from = Math.max(machine.metered_until ?? machine.started_at, machine.started_at)
          const to = machine.runs ? now : (machine.stopped_at ?? now)
          const whole = Math.floor((to - from) / 1000)
          if (whole <= 0) continue
          const hourly = prices.hourly_micros[machine.size]
          const priced = meter(whole, hourly, permille, machine.carry ?? 0)
          const hour = from - (from % hourMs)
          // The open usage row goes on while its hour, payer and size do; else it is closed and a new one opens.
          const goesOn = machine.open_hour === hour && machine.open_basis === basis && Boolean(machine.same_size)
          const list = machine.metered_until === null ? meters.opened : goesOn ? meters.continued : meters.reopened
          list.push({
            organization_id: organizationId,
            machine_id: machine.id,
            size: machine.size,
            price_basis: basis,
            hour_start: hour,
            seconds: (goesOn ? machine.open_seconds ?? 0 : 0) + whole,
            hourly_micros: hourly,
            multiplier_permille: permille,
            amount_micros: (goesOn ? machine.open_amount ?? 0 : 0) + priced.amount,
            metered_until: from + whole * 1000,
            carry: priced.carry
          })
          total += priced.amount
          seconds += whole
          charged.push(machine.id)
        }
        if (account === null) continue
        const charges = charge(account, total, charged, seconds, now)
        if (charges.changed) entries.push(charges.entry)
        if (charges.exhausted) exhausted.push(organizationId)
      }
      yield* repo.meterMany(meters)
      yield* accounts.postMany(entries)
      for (const organizationId of exhausted) yield* notices.exhausted(organizationId)
      return exhausted
    })

  /**
   * Meters every machine with unmetered time by now (or only `machineId`: a stop); answers the
   * organizations that became exhausted, whose machines the caller stops, and how many machines
   * it looked at (none: nothing runs or stopped lately). One run at a time: a stop's metering
   * waits for the tick, whose candidates were read before its batches were written.
   */
  const run = (machineId: string | null = null) =>
    lock.withPermits(1)(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const recentSince = now - 2 * intervalMs
      const candidates = yield* (machineId === null
        ? repo.candidates(recentSince)
        : repo.candidate(recentSince, machineId))
      const byOrganization = new Map<string, Array<MeterCandidate>>()
      for (const machine of candidates) {
        const list = byOrganization.get(machine.organization_id)
        if (list === undefined) byOrganization.set(machine.organization_id, [machine])
        else list.push(machine)
      }
      const batches: Array<Array<readonly [string, ReadonlyArray<MeterCandidate>]>> = [[]]
      let size = 0
      for (const entry of byOrganization) {
        if (size >= machinesPerBatch) {
          batches.push([])
          size = 0
        }
        batches[batches.length - 1]!.push(entry)
        size += entry[1].length
      }
      const exhausted: Array<string> = []
      for (const batch of batches) {
        if (batch.length === 0) continue
        // Not waiting for the flush: a batch lost to a crash is metered again by the next tick (its
        // meters did not move), and the next commit makes it durable anyway.
        const newly = yield* commit.applied(meterBatch(batch, now))
        exhausted.push(...newly)
        // Lets requests in between batches.
        yield* Effect.yieldNow()
      }
      return { exhausted, machines: candidates.length }
    }))

  return { run, intervalMs }
})

export class Meter extends Context.Tag("svc/billing/Meter")<Meter, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Meter, make)
}
