/**
 * SSE responses of history then live (src/http/EventStreams.ts), with a scripted read: what is
 * written, when the reader waits for news, and when it needs no watch at all.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Option, Stream } from "effect"
import { makeWakeups } from "../../src/events/Wakeups.js"
import { type EventBatch, eventStreamResponse } from "../../src/http/EventStreams.js"

/** A read that answers `batches` in turn, counting its calls. */
const scripted = (batches: ReadonlyArray<EventBatch>) => {
  let reads = 0
  return {
    read: Effect.sync(() => batches[Math.min(reads++, batches.length - 1)]!),
    reads: () => reads
  }
}

const decoder = new TextDecoder()

/** How the body is written, and each chunk written. */
const bodyOf = (response: Effect.Effect.Success<ReturnType<typeof eventStreamResponse>>) =>
  Effect.gen(function*() {
    const body = response.body
    assert.strictEqual(response.headers["cache-control"], "no-cache")
    if (body._tag === "Uint8Array") {
      assert.strictEqual(body.contentType, "text/event-stream")
      return { kind: "one body", chunks: [decoder.decode(body.body)] }
    }
    if (body._tag !== "Stream") return yield* Effect.dieMessage(`unexpected body ${body._tag}`)
    assert.strictEqual(body.contentType, "text/event-stream")
    const chunks = yield* Stream.runCollect(body.stream)
    return { kind: "stream", chunks: Chunk.toArray(Chunk.map(chunks, (chunk) => decoder.decode(chunk))) }
  })

describe("event stream responses", () => {
  it.scoped("a first read that ends is answered as one body, without watching", () =>
    Effect.gen(function*() {
      const script = scripted([{ frames: "a\n\nend\n\n", then: "end" }])
      const response = yield* eventStreamResponse(script.read, Effect.dieMessage("watched"))
      assert.deepStrictEqual(yield* bodyOf(response), { kind: "one body", chunks: ["a\n\nend\n\n"] })
      assert.strictEqual(script.reads(), 1)
    }))

  it.scoped("full pages are read on without news; then it waits for news, and each read is one chunk", () =>
    Effect.gen(function*() {
      const wakeups = makeWakeups<string>()
      const script = scripted([
        { frames: "1\n\n", then: "more" },
        { frames: "2\n\n", then: "wait" },
        { frames: "", then: "wait" },
        { frames: "3\n\n4\n\n", then: "end" }
      ])
      const response = yield* eventStreamResponse(script.read, wakeups.watch("k"))
      const reading = yield* Effect.fork(bodyOf(response))
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      // The second page came without news; the re-read at the start of the watch found nothing.
      assert.strictEqual(script.reads(), 3)
      assert.isTrue(Option.isNone(yield* Fiber.poll(reading)), "waits for news")
      assert.strictEqual(wakeups.watching("k"), 1)
      yield* wakeups.wake("other")
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      assert.strictEqual(script.reads(), 3, "another key's news reads nothing")
      yield* wakeups.wake("k")
      assert.deepStrictEqual(yield* Fiber.join(reading), { kind: "stream", chunks: ["1\n\n", "2\n\n", "3\n\n4\n\n"] })
      assert.strictEqual(wakeups.watching("k"), 0, "the ended stream closed its watch")
    }))

  it.scoped("a reader that has seen everything but the end writes nothing until there is more", () =>
    Effect.gen(function*() {
      const wakeups = makeWakeups<string>()
      const script = scripted([{ frames: "", then: "wait" }, { frames: "", then: "wait" }, {
        frames: "end\n\n",
        then: "end"
      }])
      const response = yield* eventStreamResponse(script.read, wakeups.watch("k"))
      const reading = yield* Effect.fork(bodyOf(response))
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      yield* wakeups.wake("k")
      assert.deepStrictEqual(yield* Fiber.join(reading), { kind: "stream", chunks: ["end\n\n"] })
    }))
})
