/**
 * The machines area's accept rules, at the service (no HTTP): names, idempotency keys, state
 * conflicts against the projected state, environments and the count limits. Each is checked inside
 * the accept's transaction, before anything is recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { defaultLimits } from "../../src/kernel/config/AppConfig.js"
import { Machines } from "../../src/machines/Machines.js"
import { Operations } from "../../src/operations/Operations.js"
import { failureTag, newMachine, owner, services } from "../support/Services.js"

describe("machines: accepting changes", () => {
  it.scoped("a live name is taken once per organization; another organization may use it", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const machines = Context.get(context, Machines)
      const alice = yield* owner(context, "alice@example.com")
      const bob = yield* owner(context, "bob@example.com")
      yield* machines.create(alice, newMachine("web"))
      assert.strictEqual(yield* failureTag(machines.create(alice, newMachine("web"))), "name_taken")
      assert.strictEqual(yield* failureTag(machines.create(bob, newMachine("web"))), "succeeded")
    }))

  it.scoped("the same Idempotency-Key answers the first operation; with another body it conflicts", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const machines = Context.get(context, Machines)
      const alice = { ...(yield* owner(context, "alice@example.com")), idempotencyKey: "k1" }
      const first = yield* machines.create(alice, newMachine("one"))
      const again = yield* machines.create(alice, newMachine("one"))
      assert.deepStrictEqual(again, first)
      assert.strictEqual(yield* failureTag(machines.create(alice, newMachine("two"))), "idempotency_conflict")
    }))

  it.scoped("a change is checked against the state the machine will have: exec on a stopped machine is refused", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const machines = Context.get(context, Machines)
      const alice = yield* owner(context, "alice@example.com")
      const made = yield* machines.create(alice, newMachine("idle", false))
      assert.strictEqual(
        yield* failureTag(machines.change(alice, made.machine_id, "exec", { command: ["true"] })),
        "machine_not_running"
      )
      // Accepted start: the machine will run, so an exec behind it is accepted at once.
      yield* machines.change(alice, made.machine_id, "start", {})
      assert.strictEqual(
        yield* failureTag(machines.change(alice, made.machine_id, "exec", { command: ["true"] })),
        "succeeded"
      )
      yield* machines.change(alice, made.machine_id, "delete", {})
      assert.strictEqual(yield* failureTag(machines.change(alice, made.machine_id, "start", {})), "machine_deleted")
    }))

  it.scoped("an unknown environment is refused before the machine is recorded", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const machines = Context.get(context, Machines)
      const alice = yield* owner(context, "alice@example.com")
      const missing = { ...newMachine("env"), environment_id: "0190a0a0-0000-7000-8000-000000000000" }
      assert.strictEqual(yield* failureTag(machines.create(alice, missing)), "resource_not_found")
      assert.strictEqual((yield* machines.page(alice.organizationId, 10, null, null)).items.length, 0)
    }))

  it.scoped("the tier's concurrent machines count projected runs: one past the limit is refused", () =>
    Effect.gen(function*() {
      const context = yield* services({
        limits: { ...defaultLimits, unlimited: { concurrent_machines: 1, starts_per_hour: 100 } }
      })
      const machines = Context.get(context, Machines)
      const alice = yield* owner(context, "alice@example.com")
      yield* machines.create(alice, newMachine("first", true))
      assert.strictEqual(yield* failureTag(machines.create(alice, newMachine("second", true))), "limit_exceeded")
      // A machine that does not start takes no slot.
      assert.strictEqual(yield* failureTag(machines.create(alice, newMachine("third", false))), "succeeded")
    }))

  it.scoped("machines and operations page with a cursor; another organization sees none of them", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const machines = Context.get(context, Machines)
      const operations = Context.get(context, Operations)
      const alice = yield* owner(context, "alice@example.com")
      const bob = yield* owner(context, "bob@example.com")
      const made = yield* Effect.forEach(["a", "b", "c"], (name) => machines.create(alice, newMachine(name)))
      const first = yield* machines.page(alice.organizationId, 2, null, null)
      assert.deepStrictEqual(first.items.map((row) => row.name), ["a", "b"])
      const second = yield* machines.page(alice.organizationId, 2, first.next_cursor, null)
      assert.deepStrictEqual(second.items.map((row) => row.name), ["c"])
      assert.strictEqual(second.next_cursor, null)
      assert.strictEqual((yield* machines.page(bob.organizationId, 10, null, null)).items.length, 0)

      const machineId = made[0]!.machine_id
      yield* machines.change(alice, machineId, "start", {})
      yield* machines.change(alice, machineId, "stop", { force: false, stop_reason: "api" })
      const ops = yield* operations.pageForMachine(alice.organizationId, machineId, 2, null)
      assert.deepStrictEqual(ops.items.map((row) => row.kind), ["stop", "start"])
      const rest = yield* operations.pageForMachine(alice.organizationId, machineId, 2, ops.next_cursor)
      assert.deepStrictEqual(rest.items.map((row) => row.kind), ["create"])
      assert.strictEqual(
        yield* failureTag(operations.pageForMachine(bob.organizationId, machineId, 2, null)),
        "resource_not_found"
      )
    }))
})
