/**
 * Durability's bookkeeping: an answer waits for a flush that started after its commit; flushes are
 * shared by everyone waiting when they start; a failed flush fails the answers it was to cover.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, FiberRef, Option } from "effect"
import * as Durability from "../../../src/kernel/sql/Durability.js"

/** A flush that ends when the test says so. */
const manualFlushes = () => {
  const pending: Array<(error: unknown) => void> = []
  return { pending, flush: (done: (error: unknown) => void) => void pending.push(done) }
}

describe("durability", () => {
  it.effect("flushes are shared, and a commit made during a flush waits for the next one", () =>
    Effect.gen(function*() {
      const flushes = manualFlushes()
      const durability = Durability.make(flushes.flush)
      const { syncThrough } = durability.shape

      const first = durability.commit()
      const second = durability.commit()
      const a = yield* Effect.fork(syncThrough(first))
      const b = yield* Effect.fork(syncThrough(second))
      yield* Effect.yieldNow()
      assert.strictEqual(flushes.pending.length, 1, "one flush covers both commits")
      const third = durability.commit()
      const c = yield* Effect.fork(syncThrough(third))
      yield* Effect.yieldNow()
      assert.strictEqual(flushes.pending.length, 1, "no second flush while one runs")

      flushes.pending.shift()!(null)
      yield* Fiber.join(a)
      yield* Fiber.join(b)
      assert.isTrue(Option.isNone(yield* Fiber.poll(c)), "the commit made during the flush is not covered by it")
      assert.strictEqual(flushes.pending.length, 1, "the next flush started for it")
      flushes.pending.shift()!(null)
      yield* Fiber.join(c)

      // Everything is on disk: no flush needed, and a fiber that made no commit never waits.
      yield* syncThrough(third)
      yield* durability.shape.syncOwn
      assert.strictEqual(flushes.pending.length, 0)
      assert.isFalse(durability.pending())
    }))

  it.effect("syncOwn waits for the fiber's own last commit", () =>
    Effect.gen(function*() {
      const flushes = manualFlushes()
      const durability = Durability.make(flushes.flush)
      yield* FiberRef.set(Durability.LastCommit, durability.commit())
      const own = yield* Effect.fork(durability.shape.syncOwn)
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(own)))
      flushes.pending.shift()!(null)
      yield* Fiber.join(own)
    }))

  it.effect("a failed flush fails the answers it covered; the next flush is tried anew", () =>
    Effect.gen(function*() {
      const flushes = manualFlushes()
      const durability = Durability.make(flushes.flush)
      const failed = yield* Effect.fork(durability.shape.syncThrough(durability.commit()))
      yield* Effect.yieldNow()
      flushes.pending.shift()!(new Error("EIO"))
      const exit = yield* Fiber.await(failed)
      assert.isTrue(Exit.isFailure(exit))
      const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(defect, Durability.FlushFailed)
      assert.include((defect as Error).message, "EIO")
      assert.isTrue(durability.pending(), "still not known to be on disk")

      const next = yield* Effect.fork(durability.shape.syncThrough(durability.commit()))
      yield* Effect.yieldNow()
      flushes.pending.shift()!(null)
      yield* Fiber.join(next)
      assert.isFalse(durability.pending())
    }))
})
