/**
 * The meter: running time per machine in whole seconds, priced at its size's hourly price times the
 * multiplier of what pays for it, with the fraction of a micro carried per machine (MeterRepo holds
 * the SQL). A machine's meter is written when its run starts, ends, or its hour or payer changes;
 * between those a tick charges each organization what its open runs cost since its mark, read in
 * one aggregate, and moves one mark per organization: a tick's writes follow the organizations, not
 * the machines. Charges are posted in SQL (ChargeRepo: trial, then plan, then credit, ledger rows
 * with the balances) in the same transaction as the marks and meters they account for, so a crash
 * keeps each whole or not at all. In `unlimited` mode the usage is recorded at list prices and
 * nothing is charged.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { Accounts } from "./Accounts.js"
import { ChargeRepo } from "./ChargeRepo.js"
import { MeterRepo, type SpanKind } from "./MeterRepo.js"
import { makeNotices } from "./Notices.js"
import { BillingRepo } from "./Repo.js"

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
  const charges = yield* ChargeRepo
  const accounts = yield* Accounts
  const notices = yield* makeNotices
  const commit = yield* GroupCommit
  const prices = accounts.prices
  const intervalMs = (config.meterSeconds ?? 60) * 1000
  const lock = yield* Effect.makeSemaphore(1)
  let swept = false

  /** Makes the accounts these organizations lack (`metered` mode only), before their runs are settled. */
  const ensureAccounts = (organizationIds: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      if (!accounts.metered) return
      const held = new Set(yield* repo.withAccount(organizationIds))
      for (const organizationId of organizationIds) {
        if (!held.has(organizationId)) yield* accounts.ensure(organizationId)
      }
    })

  /** Posts the charges the transaction filled (`metered` mode only); answers the newly exhausted. */
  const postCharges = (now: number) =>
    Effect.gen(function*() {
      const exhausted = accounts.metered ? yield* charges.post(now) : []
      yield* charges.clear
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
      const page = yield* meterRepo.tick(after, now, organizationsPerPage, accounts.metered)
      const exhausted = yield* postCharges(now)
      const settle = new Map<string, ToSettle>()
      for (const row of page.unsettled) {
        settle.set(row.organization_id, {
          runs: Math.max(row.open_runs, row.running_runs),
          // Runs without a meter only when the open meters do not hold every running machine's run.
          kinds: [
            ...(row.open_runs > 0 ? ["open" as const] : []),
            ...(row.running_runs > 0 && row.holds_every_run === 0 ? ["started" as const] : [])
          ]
        })
      }
      return { next: page.next, settle, exhausted, machines: page.machines }
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
      yield* ensureAccounts(organizationIds)
      yield* meterRepo.settle({
        organizationIds,
        kinds,
        now,
        recentSince,
        machineId,
        metered: accounts.metered,
        prices
      })
      return yield* postCharges(now)
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
