/** Keyed wake-ups (src/kernel/events/Wakeups.ts): a watch completes for news of its own key only. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option, Scope } from "effect"
import { makeWakeups } from "../../../src/kernel/events/Wakeups.js"

/** Whether `fiber` has finished once every other ready fiber has run. */
const finished = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) =>
  Effect.zipRight(Effect.repeatN(Effect.yieldNow(), 10), Effect.map(Fiber.poll(fiber), Option.isSome))

describe("wake-ups", () => {
  it.scoped("the first next completes at once; then only news of the watched key completes one", () =>
    Effect.gen(function*() {
      const wakeups = makeWakeups<string>()
      const watch = yield* wakeups.watch("a")
      yield* watch.next
      const waiting = yield* Effect.fork(watch.next)
      assert.isFalse(yield* finished(waiting))
      yield* wakeups.wake("b")
      assert.isFalse(yield* finished(waiting), "another key's news")
      yield* wakeups.wake("a")
      assert.isTrue(yield* finished(waiting))
    }))

  it.scoped("news that came before next is not lost, and many are seen as one", () =>
    Effect.gen(function*() {
      const wakeups = makeWakeups<string>()
      const watch = yield* wakeups.watch("a")
      yield* watch.next
      yield* wakeups.wake("a")
      yield* wakeups.wake("a")
      yield* wakeups.wake("a")
      yield* watch.next
      assert.isFalse(yield* finished(yield* Effect.fork(watch.next)))
    }))

  it.scoped("every watch of a key is woken, and a closed watch leaves nothing behind", () =>
    Effect.gen(function*() {
      const wakeups = makeWakeups<string>()
      const scopes = yield* Effect.all([Scope.make(), Scope.make()])
      const watches = yield* Effect.forEach(scopes, (scope) => Scope.extend(wakeups.watch("a"), scope))
      assert.strictEqual(wakeups.watching("a"), 2)
      yield* Effect.forEach(watches, (watch) => watch.next, { discard: true })
      const waiting = yield* Effect.forEach(watches, (watch) => Effect.fork(watch.next))
      yield* wakeups.wake("a")
      for (const fiber of waiting) assert.isTrue(yield* finished(fiber))
      yield* Scope.close(scopes[0], Exit.void)
      assert.strictEqual(wakeups.watching("a"), 1)
      yield* Scope.close(scopes[1], Exit.void)
      assert.strictEqual(wakeups.watching("a"), 0)
    }))
})
