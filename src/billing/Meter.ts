/**
 * The meter: running time per machine in whole seconds, priced at its size's hourly price times the
 * multiplier of what pays for it, with the fraction of a micro carried per machine (MeterRepo holds
 * the SQL). A machine's meter is written when its run starts, ends, or its hour or payer changes;
 * between those a tick charges each organization what its open runs cost since its mark, read in
 * one aggregate, and moves one mark per organization: a tick's writes follow the organizations, not
 * the machines. Charges are postings (trial, then plan, then credit: ledger rows with the balances)
 * in the same transaction as the marks and meters they account for, so a crash keeps each whole or
 * not at all. In `unlimited` mode the usage is recorded at list prices and nothing is charged.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { Accounts, type Posting, type Postings } from "./Accounts.js"
import { MeterRepo, type MeterSum, type OpenRuns, type SpanKind } from "./MeterRepo.js"
import { exhaustedSince, monthOf, onTrialRules, permilleOf, split } from "./Money.js"
import { makeNotices } from "./Notices.js"
import { BillingRepo, type MeteredAccount } from "./Repo.js"

/**
 * Organizations read and charged in one transaction of a tick: bounds how long one holds the event
 * loop, while each transaction's commit and few statements are paid once per page.
 */
const organizationsPerPage = 1000

/**
 * Machines settled in one transaction (whole organizations: a batch closes once it holds this many),
 * as at an hour's end, when every meter's span is closed: bounds how long one holds the event loop.
 */
const machinesPerSettle = 2500

/** An organization to settle: about how many machines, and which kinds of span it may hold. */
interface ToSettle {
  readonly runs: number
  readonly kinds: ReadonlyArray<SpanKind>
}

const allKinds: ReadonlySet<SpanKind> = new Set(["open", "started", "lost"])

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const repo = yield* BillingRepo
  const meterRepo = yield* MeterRepo
  const accounts = yield* Accounts
  const notices = yield* makeNotices
  const commit = yield* GroupCommit
  const prices = accounts.prices
  const intervalMs = (config.meterSeconds ?? 60) * 1000
  const lock = yield* Effect.makeSemaphore(1)
  let swept = false

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
    // What exhaustion reads of the account after the charge (not a copy of the whole row).
    const after = {
      minimum_balance_micros: account.minimum_balance_micros,
      spend_cap_micros: account.spend_cap_micros,
      exhausted_since: account.exhausted_since,
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

  /** Reads (or makes) the accounts of these organizations; none in `unlimited` mode. */
  const accountsOf = (organizationIds: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const accountOf = new Map<string, MeteredAccount>()
      if (!accounts.metered) return accountOf
      for (const account of yield* repo.accountsOf(organizationIds)) accountOf.set(account.organization_id, account)
      for (const organizationId of organizationIds) {
        if (!accountOf.has(organizationId)) accountOf.set(organizationId, yield* accounts.ensure(organizationId))
      }
      return accountOf
    })

  /** Posts each account's charge of its organization's sums (several: added up); answers the newly exhausted. */
  const post = (accountOf: ReadonlyMap<string, MeteredAccount>, sums: ReadonlyArray<MeterSum>, now: number) =>
    Effect.gen(function*() {
      const sumOf = new Map<string, MeterSum>()
      for (const sum of sums) {
        const before = sumOf.get(sum.organization_id)
        sumOf.set(
          sum.organization_id,
          before === undefined ? sum : {
            organization_id: sum.organization_id,
            amount: before.amount + sum.amount,
            seconds: before.seconds + sum.seconds,
            machines: before.machines + sum.machines,
            machine_id: before.machine_id ?? sum.machine_id,
            charged_micros: before.charged_micros + sum.charged_micros,
            charged_seconds: before.charged_seconds + sum.charged_seconds
          }
        )
      }
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
   * The usual tick of a page of organizations (by id, after `after`), in one transaction: each whose
   * open meters are still the ones to go on (they hold its running machines' runs, opened this hour
   * for its payer of now) is charged what they cost by now less what its mark charged, and its mark
   * moves to now; the others are answered, to be settled. `next`: where the next page starts (none:
   * this was the last).
   */
  const tickPage = (after: string, now: number) =>
    Effect.gen(function*() {
      const marks = yield* meterRepo.page(after, organizationsPerPage)
      const next = marks.length < organizationsPerPage ? null : marks[marks.length - 1]!.organization_id
      const markOf = new Map(marks.map((row) => [row.organization_id, row]))
      const openOf = new Map((yield* meterRepo.open(after, next, now)).map((row) => [row.organization_id, row]))
      const runningOf = new Map((yield* meterRepo.running(after, next)).map((row) => [row.organization_id, row]))
      const machines = [...runningOf.values()].reduce((sum, row) => sum + row.runs, 0)
      const hour = now - (now % 3_600_000)
      const goOn: Array<OpenRuns> = []
      const sums: Array<MeterSum> = []
      const charged = new Map<string, MeteredAccount>()
      const settle = new Map<string, ToSettle>()
      for (const organizationId of new Set([...openOf.keys(), ...runningOf.keys()])) {
        const [mark, open, running] = [
          markOf.get(organizationId),
          openOf.get(organizationId),
          runningOf.get(organizationId)
        ]
        const holdsEveryRun = open !== undefined && running !== undefined && open.runs === running.runs &&
          open.started_sum === running.started_sum
        // A mark's account came with it; one without (a new organization) is made.
        const account = mark === undefined || !accounts.metered
          ? null
          : mark.account_id === null
          ? yield* accounts.ensure(organizationId)
          : mark
        if (
          !holdsEveryRun || open === undefined || mark === undefined || mark.hour_start !== hour ||
          mark.price_basis !== basisOf(account).basis
        ) {
          settle.set(organizationId, {
            runs: Math.max(open?.runs ?? 0, running?.runs ?? 0),
            // Runs without a meter only when the open meters do not hold every running machine's run.
            kinds: [
              ...(open === undefined ? [] : ["open" as const]),
              ...(running !== undefined && !holdsEveryRun ? ["started" as const] : [])
            ]
          })
          continue
        }
        goOn.push(open)
        if (account !== null) charged.set(organizationId, account)
        const seconds = open.cost_seconds - mark.charged_seconds
        sums.push({
          organization_id: organizationId,
          amount: open.cost_micros - mark.charged_micros,
          seconds,
          machines: seconds > 0 ? open.runs : 0,
          machine_id: open.machine_id,
          charged_micros: mark.charged_micros,
          charged_seconds: mark.charged_seconds
        })
      }
      const exhausted = yield* post(charged, sums, now)
      yield* meterRepo.charged(goOn, now)
      return { next, settle, exhausted, machines }
    })

  /**
   * Settles a batch of organizations' runs (or only `machineId`'s: a stop) by `now` in one
   * transaction: every open meter closed into the usage rows and the running ones opened again,
   * runs no meter holds yet metered, the spans' cost since the marks charged; answers the
   * organizations that became exhausted.
   */
  const settleBatch = (
    organizationIds: ReadonlyArray<string>,
    kinds: ReadonlySet<SpanKind>,
    now: number,
    recentSince: number,
    machineId: string | null
  ) =>
    Effect.gen(function*() {
      const accountOf = yield* accountsOf(organizationIds)
      const basis = organizationIds.map((organizationId) => {
        const { basis: price_basis, permille } = basisOf(accountOf.get(organizationId) ?? null)
        return { organization_id: organizationId, price_basis, multiplier_permille: permille }
      })
      const sums = yield* meterRepo.settle({ kinds, now, recentSince, machineId, basis, hourly: prices.hourly_micros })
      // A whole organization's open meters now start within a second of now: nothing of them charged.
      // A stop's spans leave its organization's mark.
      if (machineId === null) yield* meterRepo.settled(basis, now)
      else yield* Effect.forEach(sums, meterRepo.closed, { discard: true })
      return yield* post(accountOf, sums, now)
    })

  /**
   * Meters every running machine by now (or only `machineId`: a stop); answers the organizations
   * that became exhausted, whose machines the caller stops, and how many machines run (none: the
   * worker may sleep). One run at a time: a stop's metering waits for a tick in progress. The first
   * run after start also settles the organizations with a run lost in a crash (see MeterRepo `lost`).
   * Not waiting for each transaction's flush: one lost to a crash is metered again by the next tick
   * (its marks and meters did not move), and the next commit makes it durable anyway.
   */
  const run = (machineId: string | null = null) =>
    lock.withPermits(1)(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const recentSince = now - 2 * intervalMs
      if (machineId !== null) {
        const organizationId = yield* meterRepo.toSettle(machineId, recentSince)
        if (Option.isNone(organizationId)) return { exhausted: [], machines: 0 }
        const exhausted = yield* commit.applied(
          settleBatch([organizationId.value], allKinds, now, recentSince, machineId)
        )
        return { exhausted, machines: 1 }
      }
      const exhausted: Array<string> = []
      const settle = new Map<string, ToSettle>()
      let machines = 0
      let after: string | null = ""
      while (after !== null) {
        const page: Effect.Effect.Success<ReturnType<typeof tickPage>> = yield* commit.applied(tickPage(after, now))
        exhausted.push(...page.exhausted)
        for (const [organizationId, toSettle] of page.settle) settle.set(organizationId, toSettle)
        machines += page.machines
        after = page.next
        // Lets requests in between transactions.
        yield* Effect.yieldNow()
      }
      if (!swept) {
        for (const organizationId of yield* meterRepo.lost(recentSince)) {
          const { kinds = [], runs = 1 } = settle.get(organizationId) ?? {}
          settle.set(organizationId, { runs, kinds: [...kinds, "lost"] })
        }
        swept = true
      }
      // Whole organizations a batch, closed once it holds this many machines.
      const batches: Array<{ organizationIds: Array<string>; kinds: Set<SpanKind>; weight: number }> = []
      for (const [organizationId, { kinds, runs }] of settle) {
        let batch = batches[batches.length - 1]
        if (batch === undefined || batch.weight >= machinesPerSettle) {
          batches.push(batch = { organizationIds: [], kinds: new Set(), weight: 0 })
        }
        batch.organizationIds.push(organizationId)
        for (const kind of kinds) batch.kinds.add(kind)
        batch.weight += runs + 1
      }
      for (const { kinds, organizationIds } of batches) {
        exhausted.push(...(yield* commit.applied(settleBatch(organizationIds, kinds, now, recentSince, null))))
        yield* Effect.yieldNow()
      }
      return { exhausted, machines }
    }))

  return { run, intervalMs }
})

export class Meter extends Context.Tag("svc/billing/Meter")<Meter, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Meter, make)
}
