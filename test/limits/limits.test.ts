/**
 * The count limits, at the service (no HTTP): the view counts machines projected to run and boots
 * of the last hour; a boot past either is refused; boots leave the hourly window on
 * the TestClock; a member's own `max_running_machines` caps only the machines they run. Over a
 * temporary SQLite file with the `process` driver.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, TestClock } from "effect"
import { defaultLimits } from "../../src/kernel/config/AppConfig.js"
import { Limits } from "../../src/limits/Limits.js"
import { Machines } from "../../src/machines/Machines.js"
import { newMachine, owner, services } from "../support/Services.js"

const hour = 3_600_000

const failure = <A, E extends { readonly _tag: string; readonly detail?: string | undefined }, R>(
  effect: Effect.Effect<A, E, R>
) =>
  Effect.map(
    Effect.either(effect),
    Either.match({ onLeft: (error) => `${error._tag}: ${error.detail ?? ""}`, onRight: () => "succeeded" })
  )

/** The unlimited tier (billing `unlimited`, the tests' setting) with these limits. */
const withLimits = (concurrent_machines: number, starts_per_hour: number) => ({
  limits: { ...defaultLimits, unlimited: { concurrent_machines, starts_per_hour } }
})

describe("limits", () => {
  it.scoped("the view counts projected runs and boots; a boot past the machines running at once is refused", () =>
    Effect.gen(function*() {
      const context = yield* services(withLimits(2, 100))
      const limits = Context.get(context, Limits)
      const machines = Context.get(context, Machines)
      const alice = yield* owner(context, "alice@example.com")
      const bob = yield* owner(context, "bob@example.com")

      assert.deepStrictEqual(yield* limits.view(alice.organizationId), {
        tier: "unlimited",
        status: "active",
        concurrent_machines: { limit: 2, used: 0 },
        starts: [{ window: "hour", limit: 100, used: 0 }]
      })
      const first = yield* machines.create(alice, newMachine("first", true))
      yield* machines.create(alice, newMachine("idle", false)) // no boot, no slot
      const one = yield* limits.view(alice.organizationId)
      assert.deepStrictEqual(one.concurrent_machines, { limit: 2, used: 1 })
      assert.deepStrictEqual(one.starts, [{ window: "hour", limit: 100, used: 1 }])

      yield* machines.create(alice, newMachine("second", true))
      const full = yield* limits.view(alice.organizationId)
      assert.deepStrictEqual(full.concurrent_machines, { limit: 2, used: 2 })
      assert.include(yield* failure(machines.create(alice, newMachine("third", true))), "limit_exceeded")
      // Another organization counts its own.
      assert.strictEqual((yield* limits.view(bob.organizationId)).concurrent_machines.used, 0)

      // An accepted stop frees the slot at once (projected state); the boot stays counted.
      yield* machines.change(alice, first.machine_id, "stop", { force: false, stop_reason: "api" })
      const freed = yield* limits.view(alice.organizationId)
      assert.deepStrictEqual(freed.concurrent_machines, { limit: 2, used: 1 })
      assert.deepStrictEqual(freed.starts, [{ window: "hour", limit: 100, used: 2 }])
    }))

  it.scoped("boots per hour: the boot past the limit is refused until the hour has passed", () =>
    Effect.gen(function*() {
      const context = yield* services(withLimits(100, 3))
      const limits = Context.get(context, Limits)
      const machines = Context.get(context, Machines)
      const alice = yield* owner(context, "alice@example.com")

      const a = yield* machines.create(alice, newMachine("a", true)) // boot 1
      // Starting a machine projected to run boots nothing and costs no start.
      yield* machines.change(alice, a.machine_id, "start", {})
      assert.strictEqual((yield* limits.view(alice.organizationId)).starts[0]!.used, 1)
      yield* TestClock.adjust("10 minutes")
      // A restart of a running machine is a boot, though it takes no new slot.
      yield* machines.change(alice, a.machine_id, "restart", {}) // boot 2, at 10 minutes
      const b = yield* machines.create(alice, newMachine("b", false))
      yield* TestClock.adjust("10 minutes")
      yield* machines.change(alice, b.machine_id, "start", {}) // boot 3, at 20 minutes
      const full = yield* limits.view(alice.organizationId)
      assert.deepStrictEqual(full.starts, [{ window: "hour", limit: 3, used: 3 }])
      assert.strictEqual(full.concurrent_machines.used, 2)

      assert.include(yield* failure(machines.create(alice, newMachine("c", true))), "limit_exceeded")
      assert.include(yield* failure(machines.change(alice, a.machine_id, "restart", {})), "per hour")
      // A machine that does not boot is still accepted.
      const c = yield* machines.create(alice, newMachine("c", false))

      // One millisecond before the first boot is an hour old, it still counts.
      yield* TestClock.adjust(hour - 20 * 60_000 - 1)
      assert.strictEqual((yield* limits.view(alice.organizationId)).starts[0]!.used, 3)
      assert.include(yield* failure(machines.change(alice, c.machine_id, "start", {})), "limit_exceeded")
      yield* TestClock.adjust(1)
      const later = yield* limits.view(alice.organizationId)
      assert.deepStrictEqual(later.starts, [{ window: "hour", limit: 3, used: 2 }])
      assert.strictEqual(yield* failure(machines.change(alice, c.machine_id, "start", {})), "succeeded")
    }))

  it.scoped("a member's own max_running_machines caps the machines they run, not the organization's", () =>
    Effect.gen(function*() {
      const context = yield* services(withLimits(100, 100))
      const limits = Context.get(context, Limits)
      const machines = Context.get(context, Machines)
      const sql = Context.get(context, SqlClient.SqlClient)
      const alice = yield* owner(context, "alice@example.com")
      const bobsOwn = yield* owner(context, "bob@example.com")
      // Bob joins Alice's organization as a member; Alice's own cap is one machine.
      const bob = { ...bobsOwn, organizationId: alice.organizationId }
      yield* sql`INSERT INTO memberships (organization_id, user_id, role, joined_at)
        VALUES (${alice.organizationId}, ${bob.userId}, 'member', 0)`
      yield* sql`UPDATE memberships SET max_running_machines = 1
        WHERE organization_id = ${alice.organizationId} AND user_id = ${alice.userId}`

      yield* machines.create(bob, newMachine("bobs", true))
      const mine = yield* machines.create(alice, newMachine("mine", true))
      assert.include(yield* failure(machines.create(alice, newMachine("second", true))), "Your membership may run 1")
      const idle = yield* machines.create(alice, newMachine("idle", false))
      assert.include(yield* failure(machines.change(alice, idle.machine_id, "start", {})), "limit_exceeded")
      // Bob is not capped by Alice's cap, and the organization's view knows no member caps.
      assert.strictEqual(yield* failure(machines.create(bob, newMachine("bobs-2", true))), "succeeded")
      assert.deepStrictEqual((yield* limits.view(alice.organizationId)).concurrent_machines, { limit: 100, used: 3 })
      // Her own machine already projected to run takes no new slot: its restart is accepted.
      assert.strictEqual(yield* failure(machines.change(alice, mine.machine_id, "restart", {})), "succeeded")

      // Stopping her machine frees her slot.
      yield* machines.change(alice, mine.machine_id, "stop", { force: false, stop_reason: "api" })
      assert.strictEqual(yield* failure(machines.change(alice, idle.machine_id, "start", {})), "succeeded")
    }))
})
