/**
 * The meter's marks: between a run's start and its end (or a new hour or payer) a tick writes no
 * machine's meter, only each organization's mark, and still charges every second once; a tick that
 * finds the meters no longer matching the running machines (a stop it did not hear of, a restart, a
 * new payer) settles them: every span closed where it ended, the running ones opened again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Option, Queue, TestClock } from "effect"
import { meter } from "../../src/billing/Money.js"
import { isStop } from "../../src/billing/Worker.js"
import { DomainEvents } from "../../src/kernel/events/DomainEvents.js"
import { until } from "../support/Services.js"
import { type BillingServices, billingServices, cheapPrices, ledgerInvariant, runningMachine } from "./support.js"

// Prices that leave a fraction of a micro on almost every tick.
const hourly = { small: 1_001, default: 7_013, large: 13_331 }
const trialMicros = 10_000_000

const metered = () =>
  billingServices({
    prices: cheapPrices({ hourly_micros: hourly, trial: { total_micros: trialMicros, max_hourly_micros: 100_000 } })
  })

/** The machine's usage (all its hours and payers) and its running time as Money.meter prices it. */
const usageOf = (s: BillingServices, organizationId: string, machineId: string) =>
  Effect.gen(function*() {
    const rows = yield* s.billing.usageRows(organizationId, 0, Date.UTC(2100, 0), machineId)
    return {
      seconds: rows.reduce((sum, row) => sum + row.seconds, 0),
      amount: rows.reduce((sum, row) => sum + row.amount_micros, 0)
    }
  })

const chargedOf = (s: BillingServices, organizationId: string) =>
  Effect.gen(function*() {
    const invariant = yield* ledgerInvariant(s, organizationId)
    assert.deepStrictEqual(invariant.rows, invariant.balances)
    return trialMicros - invariant.balances.trial
  })

const machineRow = (s: BillingServices, machineId: string) => Effect.map(s.repo.find(machineId), Option.getOrThrow)

describe("meter marks", () => {
  it.scoped("between settles a tick moves only the organization's mark; every second is charged once", () =>
    Effect.gen(function*() {
      const s = yield* metered()
      const alice = yield* s.owner("alice@example.com")
      const machines = [yield* runningMachine(s, alice, "one"), yield* runningMachine(s, alice, "two", "default")]
      yield* TestClock.adjust(5_300)
      yield* s.meter.run() // the first tick opens the meters (no mark yet)
      const meters = () => s.sql`SELECT * FROM billing_meters ORDER BY machine_id`
      const opened = yield* meters()
      assert.strictEqual(opened.length, 2)
      for (const step of [7_100, 900, 13_700]) {
        yield* TestClock.adjust(step)
        yield* s.meter.run()
        const now = yield* Clock.currentTimeMillis
        const marks = yield* s.sql<{ metered_at: number }>`SELECT metered_at FROM billing_meter_marks
          WHERE organization_id = ${alice.organizationId}`
        assert.deepStrictEqual(marks.map((row) => Number(row.metered_at)), [now])
        assert.deepStrictEqual(yield* meters(), opened)
      }
      const now = yield* Clock.currentTimeMillis
      let spent = 0
      for (const machineId of machines) {
        const row = yield* machineRow(s, machineId)
        const seconds = Math.floor((now - row.started_at!) / 1000)
        const expected = meter(seconds, hourly[row.size], 1000, 0).amount
        assert.deepStrictEqual(yield* usageOf(s, alice.organizationId, machineId), { seconds, amount: expected })
        spent += expected
      }
      assert.strictEqual(yield* chargedOf(s, alice.organizationId), spent)
    }))

  it.scoped("a stop the meter never heard of is metered up to the stop by the next tick, once", () =>
    Effect.gen(function*() {
      const s = yield* metered()
      const alice = yield* s.owner("alice@example.com")
      const machineId = yield* runningMachine(s, alice, "one", "default")
      yield* TestClock.adjust(10_400)
      yield* s.meter.run()
      yield* TestClock.adjust(6_000)
      // The machine stopped 2.5 s ago and its stop's metering was lost (svc was killed after the stop).
      const stoppedAt = (yield* Clock.currentTimeMillis) - 2_500
      yield* s.sql`UPDATE machines SET state = 'stopped', projected_state = 'stopped', stopped_at = ${stoppedAt}
        WHERE id = ${machineId}`
      yield* s.meter.run()
      const row = yield* machineRow(s, machineId)
      const seconds = Math.floor((stoppedAt - row.started_at!) / 1000)
      const expected = meter(seconds, hourly.default, 1000, 0).amount
      assert.deepStrictEqual(yield* usageOf(s, alice.organizationId, machineId), { seconds, amount: expected })
      assert.strictEqual(yield* chargedOf(s, alice.organizationId), expected)
      // Its meter is closed and the organization, running nothing, has no mark for ticks to read.
      const open = yield* s.sql<{ is_open: number }>`SELECT is_open FROM billing_meters WHERE machine_id = ${machineId}`
      assert.deepStrictEqual(open.map((meter) => Number(meter.is_open)), [0])
      const marks = yield* s.sql`SELECT * FROM billing_meter_marks`
      assert.strictEqual(marks.length, 0)
      // Later ticks and a late stop's metering charge nothing more.
      yield* TestClock.adjust(30_000)
      yield* s.meter.run()
      yield* s.meter.run(machineId)
      assert.strictEqual(yield* chargedOf(s, alice.organizationId), expected)
    }))

  it.scoped("a stop of a stopped machine meters nothing again, not even a run no meter holds", () =>
    Effect.gen(function*() {
      const s = yield* metered()
      const alice = yield* s.owner("alice@example.com")
      const machineId = yield* runningMachine(s, alice, "one")
      const stopped = (state: string) =>
        until(Effect.map(machineRow(s, machineId), (row) => row.state === state || undefined))
      const stop = s.machines.change(alice, machineId, "stop", { force: false, stop_reason: "api" })
      yield* TestClock.adjust(10_000)
      yield* stop
      yield* stopped("stopped")
      yield* until(Effect.map(
        s.sql<{ is_open: number }>`SELECT is_open FROM billing_meters WHERE machine_id = ${machineId}`,
        (rows) => rows.length === 1 && Number(rows[0]!.is_open) === 0 || undefined
      ))
      const charged = yield* chargedOf(s, alice.organizationId)
      assert.isAbove(charged, 0)
      // As if the run were from before metering: no meter holds it. A stop again moves `stopped_at` to
      // now, an hour on; metering it would charge the whole hour as a run lost to a crash.
      yield* s.sql`DELETE FROM billing_meters WHERE machine_id = ${machineId}`
      yield* TestClock.adjust(3_600_000)
      const bus = Context.get(s.context, DomainEvents)
      const stops = yield* bus.subscribe(isStop)
      const all = yield* bus.subscribe((event) => event._tag === "MachineEvent" && event.machineId === machineId)
      yield* stop
      const event = yield* Queue.take(all)
      assert.deepStrictEqual(event, {
        _tag: "MachineEvent",
        type: "machine.stopped",
        machineId,
        organizationId: alice.organizationId,
        unchanged: true
      })
      assert.strictEqual(yield* Queue.size(stops), 0)
      yield* s.meter.run()
      assert.strictEqual(yield* chargedOf(s, alice.organizationId), charged)
    }))

  it.scoped("a restart closes the old run where the new one began and meters the new one from its start", () =>
    Effect.gen(function*() {
      const s = yield* metered()
      const alice = yield* s.owner("alice@example.com")
      const machineId = yield* runningMachine(s, alice, "one")
      const firstStart = (yield* machineRow(s, machineId)).started_at!
      yield* TestClock.adjust(20_700)
      yield* s.meter.run()
      yield* TestClock.adjust(9_000)
      // Restarted 3 s ago: a new run (a restart sets a new start). The instants are chosen so that
      // the two runs' whole seconds (26 + 6) are fewer than those of one span over both (33).
      const secondStart = (yield* Clock.currentTimeMillis) - 3_000
      yield* s.sql`UPDATE machines SET started_at = ${secondStart} WHERE id = ${machineId}`
      yield* TestClock.adjust(3_800)
      yield* s.meter.run()
      const now = yield* Clock.currentTimeMillis
      const first = Math.floor((secondStart - firstStart) / 1000)
      const firstRun = meter(first, hourly.small, 1000, 0)
      const second = Math.floor((now - secondStart) / 1000)
      assert.isBelow(first + second, Math.floor((now - firstStart) / 1000))
      const expected = firstRun.amount + meter(second, hourly.small, 1000, firstRun.carry).amount
      assert.deepStrictEqual(yield* usageOf(s, alice.organizationId, machineId), {
        seconds: first + second,
        amount: expected
      })
      assert.strictEqual(yield* chargedOf(s, alice.organizationId), expected)
    }))

  it.scoped("a new payer mid-hour: the spans close and open again for it; usage per payer, every second once", () =>
    Effect.gen(function*() {
      const s = yield* metered()
      const alice = yield* s.owner("alice@example.com")
      const machineId = yield* runningMachine(s, alice, "one", "default")
      yield* TestClock.adjust(12_300)
      yield* s.meter.run()
      // A confirmed payment ends the trial rules: what pays is credit from now on.
      yield* s.sql`UPDATE billing_accounts SET paid_at = ${yield* Clock.currentTimeMillis}
        WHERE organization_id = ${alice.organizationId}`
      yield* TestClock.adjust(8_800)
      yield* s.meter.run()
      yield* TestClock.adjust(5_000)
      yield* s.meter.run()
      const now = yield* Clock.currentTimeMillis
      const rows = yield* s.billing.usageRows(alice.organizationId, 0, Date.UTC(2100, 0), machineId)
      const usage = yield* s.sql<{ price_basis: string; seconds: number }>`SELECT price_basis, SUM(seconds) AS seconds
        FROM billing_usage_hours WHERE machine_id = ${machineId} GROUP BY price_basis ORDER BY price_basis`
      assert.deepStrictEqual(usage.map((row) => row.price_basis), ["credit", "trial"])
      const seconds = Math.floor((now - (yield* machineRow(s, machineId)).started_at!) / 1000)
      assert.strictEqual(usage.reduce((sum, row) => sum + Number(row.seconds), 0), seconds)
      const expected = meter(seconds, hourly.default, 1000, 0).amount
      assert.strictEqual(rows.reduce((sum, row) => sum + row.amount_micros, 0), expected)
      assert.strictEqual(yield* chargedOf(s, alice.organizationId), expected)
    }))
})
