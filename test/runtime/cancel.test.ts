/**
 * A cancel ends an operation in bounded time: a running operation other than an exec gets
 * `cancelGraceSeconds` to finish on its own, then is interrupted and ends `correlation_miss` with
 * error_code `cancelled`, and the machine's next operation runs. On the TestClock, with a driver
 * whose start never answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, TestClock } from "effect"
import { Machines } from "../../src/machines/Machines.js"
import { Operations } from "../../src/operations/Operations.js"
import { cancelGraceSeconds } from "../../src/runtime/Actors.js"
import { asleepUntil, owner, services, until } from "../support/Services.js"

describe("cancel", () => {
  it.scoped("a running start that never answers ends correlation_miss once the grace has passed", () =>
    Effect.gen(function*() {
      const context = yield* services({}, (inner) => ({ ...inner, start: () => Effect.never }))
      const machines = Context.get(context, Machines)
      const operations = Context.get(context, Operations)
      const alice = yield* owner(context, "alice@example.com")
      const made = yield* machines.create(alice, {
        name: "hangs",
        size: "small",
        image: "default",
        environment_id: null,
        internet_access: false,
        auto_stop_seconds: null,
        idle_sleep_seconds: null,
        setup_script: null,
        template: null,
        start: false
      })
      const statusOf = (id: string) => Effect.map(operations.find(alice.organizationId, id), (op) => op)
      yield* until(Effect.map(statusOf(made.operation_id), (op) => op.status === "succeeded" ? op : undefined))
      const start = yield* machines.change(alice, made.machine_id, "start", {})
      yield* until(Effect.map(statusOf(start.operation_id), (op) => op.status === "running" ? op : undefined))

      const cancelledAt = yield* Clock.currentTimeMillis
      yield* operations.cancel(alice.organizationId, start.operation_id)
      // The grace's timer is armed by a fiber of its own: move the clock once it sleeps.
      yield* asleepUntil(cancelledAt + cancelGraceSeconds * 1000)
      yield* TestClock.adjust(`${cancelGraceSeconds - 1} seconds`)
      assert.strictEqual((yield* statusOf(start.operation_id)).status, "running")
      yield* TestClock.adjust("1 second")
      const ended = yield* until(
        Effect.map(statusOf(start.operation_id), (op) => op.status === "running" ? undefined : op)
      )
      assert.strictEqual(ended.status, "correlation_miss")
      assert.strictEqual(ended.error_code, "cancelled")
      // The machine's mailbox goes on with a new actor.
      const removed = yield* machines.change(alice, made.machine_id, "delete", {})
      yield* until(Effect.map(statusOf(removed.operation_id), (op) => op.status === "succeeded" ? op : undefined))
    }))
})
