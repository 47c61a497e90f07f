/**
 * The meter tick's statements inside SQLite against the money rules in JS: machines of every size in
 * two organizations metered at uneven instants end with exactly the seconds and micros that
 * Money.meter gives their whole running time (the fraction carried across ticks), the charges equal
 * the usage, a stop is metered once (also of a machine no tick saw running), and a run repeated at the same instant (a stop's metering right
 * after a tick) charges nothing twice.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Option, TestClock } from "effect"
import { meter } from "../../src/billing/Money.js"
import { until } from "../support/Services.js"
import { billingServices, cheapPrices, ledgerInvariant, runningMachine } from "./support.js"

// Prices that leave a fraction of a micro on almost every tick.
const hourly = { small: 1_001, default: 7_013, large: 13_331 }

describe("meter tick in SQL", () => {
  it.scoped("uneven ticks over two organizations: usage and charges are Money.meter of the whole running time", () =>
    Effect.gen(function*() {
      const s = yield* billingServices({
        prices: cheapPrices({ hourly_micros: hourly, trial: { total_micros: 10_000_000, max_hourly_micros: 100_000 } })
      })
      const alice = yield* s.owner("alice@example.com")
      const bob = yield* s.owner("bob@example.com")
      const machines = [
        { organizationId: alice.organizationId, id: yield* runningMachine(s, alice, "a-small", "small") },
        { organizationId: alice.organizationId, id: yield* runningMachine(s, alice, "a-default", "default") },
        { organizationId: bob.organizationId, id: yield* runningMachine(s, bob, "b-default", "default") }
      ]
      const ledgerRows = (organizationId: string) =>
        Effect.map(
          s.sql<{ n: number }>`SELECT COUNT(*) AS n FROM billing_ledger WHERE organization_id = ${organizationId}`,
          (rows) => Number(rows[0]!.n)
        )
      for (const step of [1_700, 400, 13_300, 2_900, 999, 1_001, 45_000, 7_777]) {
        yield* TestClock.adjust(step)
        yield* s.meter.run()
        // The same instant again, as a tick and as a stop's metering: nothing more is charged.
        const before = yield* ledgerRows(alice.organizationId)
        yield* s.meter.run()
        yield* s.meter.run(machines[0]!.id)
        assert.strictEqual(yield* ledgerRows(alice.organizationId), before)
      }
      // Bob's machine stops: metered once up to its stop, never again.
      yield* s.machines.change(bob, machines[2]!.id, "stop", { force: false, stop_reason: "api" })
      yield* until(
        Effect.map(s.repo.find(machines[2]!.id), (row) => Option.getOrThrow(row).state === "stopped" || undefined)
      )
      yield* s.meter.run(machines[2]!.id)
      // A machine that starts and stops between two ticks is metered once, at its stop, from its start.
      machines.push({ organizationId: bob.organizationId, id: yield* runningMachine(s, bob, "b-brief", "small") })
      yield* TestClock.adjust(5_500)
      yield* s.machines.change(bob, machines[3]!.id, "stop", { force: false, stop_reason: "api" })
      yield* until(
        Effect.map(s.repo.find(machines[3]!.id), (row) => Option.getOrThrow(row).state === "stopped" || undefined)
      )
      yield* s.meter.run(machines[3]!.id)
      for (const step of [3_300, 61_000]) {
        yield* TestClock.adjust(step)
        yield* s.meter.run()
      }
      const now = yield* Clock.currentTimeMillis
      const spent = new Map<string, number>()
      for (const machine of machines) {
        const row = Option.getOrThrow(yield* s.repo.find(machine.id))
        const seconds = Math.floor(((row.state === "stopped" ? row.stopped_at! : now) - row.started_at!) / 1000)
        const expected = meter(seconds, hourly[row.size], 1000, 0).amount
        const usage = yield* s.billing.usageRows(machine.organizationId, 0, Date.UTC(2100, 0), machine.id)
        assert.deepStrictEqual([usage.length, usage[0]!.seconds, usage[0]!.amount_micros], [1, seconds, expected])
        spent.set(machine.organizationId, (spent.get(machine.organizationId) ?? 0) + expected)
      }
      for (const [organizationId, amount] of spent) {
        const invariant = yield* ledgerInvariant(s, organizationId)
        assert.deepStrictEqual(invariant.rows, invariant.balances)
        assert.strictEqual(10_000_000 - invariant.balances.trial, amount)
      }
      // Nothing is left in the settles' scratch tables.
      const basis = yield* s.sql<{ n: number }>`SELECT COUNT(*) AS n FROM billing_meter_basis`
      const spans = yield* s.sql<{ n: number }>`SELECT COUNT(*) AS n FROM billing_meter_spans`
      assert.deepStrictEqual([Number(basis[0]!.n), Number(spans[0]!.n)], [0, 0])
    }))
})
