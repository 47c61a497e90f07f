/**
 * SSE responses of history then live (src/kernel/http/EventStreams.ts), with a scripted read: what is
 * written, when the reader waits for news, and when it needs no watch at all.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Option } from "effect"
import * as NodeHttp from "node:http"
import type * as NodeNet from "node:net"
import type { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { makeWakeups } from "../../../src/kernel/events/Wakeups.js"
import { type EventBatch, eventStreamResponse } from "../../../src/kernel/http/EventStreams.js"

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
    if (body._tag !== "Raw") return yield* Effect.dieMessage(`unexpected body ${body._tag}`)
    assert.strictEqual(body.contentType, "text/event-stream")
    return { kind: "stream", chunks: yield* chunksOf(body.body as Readable) }
  })

/** Every chunk of a Node stream body, once it ends. */
const chunksOf = (readable: Readable) =>
  Effect.async<Array<string>>((resume) => {
    const chunks: Array<string> = []
    readable.on("data", (chunk: Buffer) => chunks.push(decoder.decode(chunk)))
    readable.on("end", () => resume(Effect.succeed(chunks)))
  })

/** Lets every ready fiber and pending callback run. */
const settle = Effect.repeatN(Effect.promise(() => new Promise((resolve) => setImmediate(resolve))), 5)

describe("event stream responses", () => {
  it.scoped("a first read that ends is answered as one body, without watching", () =>
    Effect.gen(function*() {
      const script = scripted([{ frames: "a\n\nend\n\n", then: "end" }])
      const response = yield* eventStreamResponse(script.read, () => assert.fail("listened"))
      assert.deepStrictEqual(yield* bodyOf(response), { kind: "one body", chunks: ["a\n\nend\n\n"] })
      assert.strictEqual(script.reads(), 1)
    }))

  it.live("full pages are read on without news; then it waits for news, and each read is one chunk", () =>
    Effect.gen(function*() {
      const wakeups = makeWakeups<string>()
      const script = scripted([
        { frames: "1\n\n", then: "more" },
        { frames: "2\n\n", then: "wait" },
        { frames: "", then: "wait" },
        { frames: "3\n\n4\n\n", then: "end" }
      ])
      const response = yield* eventStreamResponse(script.read, (onNews) => wakeups.listen("k", onNews))
      const reading = yield* Effect.fork(bodyOf(response))
      yield* settle
      // The second page came without news, and was read after listening began: nothing to read again.
      assert.strictEqual(script.reads(), 2)
      assert.isTrue(Option.isNone(yield* Fiber.poll(reading)), "waits for news")
      assert.strictEqual(wakeups.watching("k"), 1)
      yield* wakeups.wake("other")
      yield* settle
      assert.strictEqual(script.reads(), 2, "another key's news reads nothing")
      yield* wakeups.wake("k")
      yield* settle
      assert.strictEqual(script.reads(), 3, "news reads again; it found nothing, so it waits again")
      assert.isTrue(Option.isNone(yield* Fiber.poll(reading)))
      yield* wakeups.wake("k")
      assert.deepStrictEqual(yield* Fiber.join(reading), { kind: "stream", chunks: ["1\n\n", "2\n\n", "3\n\n4\n\n"] })
      assert.strictEqual(wakeups.watching("k"), 0, "the ended stream stopped listening")
    }))

  it.live("nothing more is read while the client does not take what was written", () =>
    Effect.gen(function*() {
      const page = "x".repeat(10_000)
      let reads = 0
      const read = Effect.sync(() =>
        ++reads < 50 ? { frames: page, then: "more" as const } : { frames: "", then: "end" as const }
      )
      const response = yield* eventStreamResponse(read, () => () => undefined)
      const body = response.body._tag === "Raw" ? response.body.body as Readable : assert.fail("not a stream")
      body.pause()
      body.read(0) // asks for data once, as a reader that then stops taking it
      yield* settle
      // The body's buffer limit is Node's default for a Readable (16 KiB on Node 20, 64 KiB since 22):
      // reads stop once what waits in it (every page read, none taken) reaches it, whichever it is.
      const limit = body.readableHighWaterMark
      assert.strictEqual(body.readableLength, reads * page.length)
      assert.isAtMost(body.readableLength, limit + page.length, "reads stop at the body's buffer limit")
      const stoppedAt = reads
      yield* settle
      assert.strictEqual(reads, stoppedAt, "and stay stopped")
      const chunks = yield* chunksOf(body.resume())
      assert.strictEqual(reads, 50)
      assert.strictEqual(chunks.join("").length, 49 * page.length)
    }))

  it.live("a client that goes away stops the listening", () =>
    Effect.gen(function*() {
      const wakeups = makeWakeups<string>()
      const script = scripted([{ frames: "a\n\n", then: "wait" }])
      const response = yield* eventStreamResponse(script.read, (onNews) => wakeups.listen("k", onNews))
      assert.strictEqual(wakeups.watching("k"), 1)
      ;(response.body._tag === "Raw" ? response.body.body as Readable : assert.fail("not a stream")).destroy()
      assert.strictEqual(wakeups.watching("k"), 0)
    }))

  it.scopedLive("the last frames and the response's end leave in one write", () =>
    Effect.gen(function*() {
      const wakeups = makeWakeups<string>()
      const script = scripted([{ frames: "a\n\n", then: "wait" }, { frames: "", then: "wait" }, {
        frames: "end\n\n",
        then: "end"
      }])
      const response = yield* eventStreamResponse(script.read, (onNews) => wakeups.listen("k", onNews))
      const body = response.body._tag === "Raw" ? response.body.body as Readable : assert.fail("not a stream")
      // Piped into a real response as the platform does; each send on the server's socket is counted.
      let sends = 0
      const server = NodeHttp.createServer((_, res) => {
        type Send = (...args: Array<unknown>) => unknown
        const socket = res.socket as NodeNet.Socket & { _writev: Send; _write: Send }
        const writev = socket._writev.bind(socket)
        const write = socket._write.bind(socket)
        socket._writev = (...args: Array<unknown>) => (sends++, writev(...args))
        socket._write = (...args: Array<unknown>) => (sends++, write(...args))
        res.writeHead(200, { "content-type": "text/event-stream" })
        void pipeline(body, res)
      })
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => server.close())
      )
      const port = (server.address() as NodeNet.AddressInfo).port
      const text = Effect.runPromise(Effect.promise(() => fetch(`http://127.0.0.1:${port}/`).then((r) => r.text())))
      yield* Effect.promise(async () => {
        while (sends === 0 || script.reads() < 2) await new Promise((resolve) => setTimeout(resolve, 5))
      })
      yield* settle
      const before = sends
      assert.strictEqual(script.reads(), 2, "waits for news")
      yield* wakeups.wake("k")
      assert.strictEqual(yield* Effect.promise(() => text), "a\n\nend\n\n")
      assert.strictEqual(sends - before, 1, "the last frames and the end in one send")
    }))

  it.live("a reader that has seen everything but the end writes nothing until there is more", () =>
    Effect.gen(function*() {
      const wakeups = makeWakeups<string>()
      const script = scripted([{ frames: "", then: "wait" }, { frames: "", then: "wait" }, {
        frames: "end\n\n",
        then: "end"
      }])
      const response = yield* eventStreamResponse(script.read, (onNews) => wakeups.listen("k", onNews))
      const reading = yield* Effect.fork(bodyOf(response))
      yield* settle
      assert.strictEqual(script.reads(), 2)
      yield* wakeups.wake("k")
      assert.deepStrictEqual(yield* Fiber.join(reading), { kind: "stream", chunks: ["end\n\n"] })
    }))
})
