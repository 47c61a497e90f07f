/**
 * The meter: running time per machine in whole seconds, priced at its size's hourly price times the
 * multiplier of what pays for it, with the fraction of a micro carried per machine. Each tick writes
 * the machines' usage, their meters and the organizations' charges (trial, then plan, then credit:
 * ledger rows with the balances) in one transaction per batch of organizations, so a long tick
 * never holds the event loop and a crash keeps every batch whole or not at all. In `unlimited`
 * mode the usage is recorded at list prices and nothing is charged.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { Accounts } from "./Accounts.js"
import { meter, monthOf, onTrialRules, permilleOf, split } from "./Money.js"
import { makeNotices } from "./Notices.js"
import { type AccountRow, BillingRepo, type MeterCandidate, type MeterWrite } from "./Repo.js"

/** Organizations metered in one transaction (some 500 machines): bounds how long one batch holds the event loop. */
const organizationsPerBatch = 50

const hourMs = 3_600_000

const runningStates = new Set(["running", "stopping", "restarting"])

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const repo = yield* BillingRepo
  const accounts = yield* Accounts
  const notices = yield* makeNotices
  const commit = yield* GroupCommit
  const prices = accounts.prices
  const intervalMs = (config.meterSeconds ?? 60) * 1000

  /** What pays for usage now, and at which share of the list price. */
  const basisOf = (account: AccountRow | null) => {
    if (account === null) return { basis: "unlimited", permille: 1000 }
    const plan = accounts.planOf(account)
    if (plan !== null) return { basis: plan, permille: permilleOf(prices.plans[plan].multiplier) }
    return { basis: onTrialRules(account) ? "trial" : "credit", permille: 1000 }
  }

  /** Takes `amount` from the balances in order, a ledger row per balance touched. */
  const charge = (
    account: AccountRow,
    amount: number,
    machines: ReadonlyArray<string>,
    seconds: number,
    now: number
  ) =>
    Effect.gen(function*() {
      const count = machines.length
      const description = `Running time: ${seconds} s over ${count} machine${count === 1 ? "" : "s"}`
      for (const part of split(account, amount)) {
        yield* accounts.post(account.organization_id, {
          kind: "usage",
          balance: part.balance,
          amount: -part.amount,
          description,
          machineId: count === 1 ? machines[0]! : null
        })
        if (part.balance === "credit") {
          const month = monthOf(now)
          yield* repo.update(account.organization_id, {
            spend_month: month,
            credit_spent_micros: (account.spend_month === month ? account.credit_spent_micros : 0) + part.amount,
            updated_at: now
          })
        }
      }
    })

  /** What each machine ran by `now`, priced; machines with no whole second yet are left for later. */
  const price = (
    organizationId: string,
    machines: ReadonlyArray<MeterCandidate>,
    account: AccountRow | null,
    now: number
  ) => {
    const { basis, permille } = basisOf(account)
    const writes: Array<MeterWrite> = []
    for (const machine of machines) {
      const from = Math.max(machine.metered_until ?? machine.started_at, machine.started_at)
      const to = runningStates.has(machine.state) ? now : (machine.stopped_at ?? now)
      const whole = Math.floor((to - from) / 1000)
      if (whole <= 0) continue
      const hourly = prices.hourly_micros[machine.size]
      const priced = meter(whole, hourly, permille, machine.carry ?? 0)
      writes.push({
        organization_id: organizationId,
        machine_id: machine.id,
        size: machine.size,
        price_basis: basis,
        hour_start: from - (from % hourMs),
        seconds: whole,
        hourly_micros: hourly,
        multiplier_permille: permille,
        amount_micros: priced.amount,
        metered_until: from + whole * 1000,
        carry: priced.carry
      })
    }
    return writes
  }

  /** Meters a batch of organizations by `now`; answers the ones that became exhausted. */
  const meterBatch = (batch: ReadonlyArray<readonly [string, ReadonlyArray<MeterCandidate>]>, now: number) =>
    Effect.gen(function*() {
      const exhausted: Array<string> = []
      const writes: Array<MeterWrite> = []
      const charges: Array<[AccountRow, ReadonlyArray<MeterWrite>]> = []
      for (const [organizationId, machines] of batch) {
        const account = accounts.metered ? yield* accounts.ensure(organizationId) : null
        const priced = price(organizationId, machines, account, now)
        writes.push(...priced)
        if (account !== null) charges.push([account, priced])
      }
      yield* repo.meterMany(writes)
      for (const [account, priced] of charges) {
        const total = priced.reduce((sum, write) => sum + write.amount_micros, 0)
        const seconds = priced.reduce((sum, write) => sum + write.seconds, 0)
        if (total > 0) yield* charge(account, total, priced.map((write) => write.machine_id), seconds, now)
        if (yield* notices.settle(account.organization_id)) exhausted.push(account.organization_id)
      }
      return exhausted
    })

  /**
   * Meters every machine with unmetered time by now (or only `machineId`: a stop); answers the
   * organizations that became exhausted, whose machines the caller stops, and how many machines
   * it looked at (none: nothing runs or stopped lately).
   */
  const run = (machineId: string | null = null) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const candidates = yield* repo.candidates(now - 2 * intervalMs, machineId)
      const byOrganization = new Map<string, Array<MeterCandidate>>()
      for (const machine of candidates) {
        const list = byOrganization.get(machine.organization_id)
        if (list === undefined) byOrganization.set(machine.organization_id, [machine])
        else list.push(machine)
      }
      const organizations = [...byOrganization.keys()]
      const exhausted: Array<string> = []
      for (let start = 0; start < organizations.length; start += organizationsPerBatch) {
        const batch = organizations.slice(start, start + organizationsPerBatch).map((organizationId) =>
          [organizationId, byOrganization.get(organizationId)!] as const
        )
        // Not waiting for the flush: a batch lost to a crash is metered again by the next tick (its
        // meters did not move), and the next commit makes it durable anyway.
        const newly = yield* commit.applied(meterBatch(batch, now))
        exhausted.push(...newly)
        // Lets requests in between batches.
        yield* Effect.yieldNow()
      }
      return { exhausted, machines: candidates.length }
    })

  return { run, intervalMs }
})

export class Meter extends Context.Tag("svc/billing/Meter")<Meter, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Meter, make)
}
