/** The interrupt escalation under TestClock: ask, 10 s, SIGTERM, 5 s, SIGKILL; force kills at once. */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import { escalate, type Step } from "../../src/agents/providers/Interrupt.js"

const target = Effect.gen(function*() {
  const steps: Array<Step> = []
  const exited = yield* Deferred.make<void>()
  return { steps, exited, escalation: { exited, step: (step: Step) => Effect.sync(() => void steps.push(step)) } }
})

describe("interrupt escalation", () => {
  it.scoped("asks, waits 10 s, sends SIGTERM, waits 5 s, sends SIGKILL", () =>
    Effect.gen(function*() {
      const { escalation, steps } = yield* target
      const fiber = yield* Effect.fork(escalate(escalation, false))
      yield* TestClock.adjust("9999 millis")
      assert.deepStrictEqual(steps, ["ask"])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(steps, ["ask", "term"])
      yield* TestClock.adjust("4999 millis")
      assert.deepStrictEqual(steps, ["ask", "term"])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(yield* Fiber.join(fiber), ["ask", "term", "kill"])
    }))

  it.scoped("stops escalating once the agent exits", () =>
    Effect.gen(function*() {
      const { escalation, exited, steps } = yield* target
      const fiber = yield* Effect.fork(escalate(escalation, false))
      yield* TestClock.adjust("3 seconds")
      yield* Deferred.succeed(exited, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), ["ask"])
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(steps, ["ask"])
    }))

  it.scoped("exits after SIGTERM: no SIGKILL", () =>
    Effect.gen(function*() {
      const { escalation, exited } = yield* target
      const fiber = yield* Effect.fork(escalate(escalation, false))
      yield* TestClock.adjust("11 seconds")
      yield* Deferred.succeed(exited, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), ["ask", "term"])
    }))

  it.scoped("force kills at once, without asking", () =>
    Effect.gen(function*() {
      const { escalation } = yield* target
      const steps = yield* escalate(escalation, true)
      assert.deepStrictEqual(steps, ["kill"])
    }))
})
