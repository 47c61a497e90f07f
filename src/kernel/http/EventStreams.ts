/**
 * Server-sent event responses of persisted history then live, shared by operation and agent events.
 * The history is read before anything is followed: a stream that has ended already (the common
 * case for a client that comes late) is answered as one body, with nothing followed. Else the
 * response body is a Node stream that listens to its key's wake-ups (src/kernel/events/Wakeups.ts) and
 * reads the database again at each, writing what one read found as one chunk.
 *
 * Why a Node stream and callbacks rather than an Effect `Stream`: a live stream of an exec cost
 * more runtime steps in the Stream's channels and the platform's per-chunk loop than accepting and
 * carrying out the exec (docs/benchmarks.md). Here each read runs as one short
 * fiber, and the platform pipes the body into the response. The body is pulled: nothing is read
 * while the client does not take what was written (the socket's back-pressure).
 */
import { HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Exit, Runtime } from "effect"
import { Readable, type Writable } from "node:stream"

/** What one read of the persisted events found. */
export interface EventBatch {
  /** The SSE frames of the events read, in order (empty when none were new). */
  readonly frames: string
  /** `end`: the stream is complete; `more`: more are stored (a page was full); `wait`: wait for news. */
  readonly then: "end" | "more" | "wait"
}

/** Follows the news of what a stream reads: calls `onNews` at each, until the returned function is called. */
export type Listen = (onNews: () => void) => () => void

const options = {
  contentType: "text/event-stream",
  headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
} as const

/**
 * The response for a reader: `read` reads the events after the last it read (it keeps its own
 * cursor), `listen` follows the wake-ups of what it reads.
 */
export const eventStreamResponse = <E>(
  read: Effect.Effect<EventBatch, E>,
  listen: Listen
): Effect.Effect<HttpServerResponse.HttpServerResponse, E> =>
  Effect.flatMap(read, (first) =>
    first.then === "end"
      ? Effect.succeed(HttpServerResponse.text(first.frames, options))
      : Effect.map(
        Effect.runtime<never>(),
        (runtime) => HttpServerResponse.raw(liveBody(first, read, listen, Runtime.runCallback(runtime)), options)
      ))

/** A body that knows what it is piped into (the HTTP response), to cork it around its end. */
class EventBody extends Readable {
  destination: Writable | undefined
  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    this.destination = destination as unknown as Writable
    return super.pipe(destination, options)
  }
}

/**
 * Pushes the last frames and the body's end with the response corked, so that they and the
 * response's end (its last chunk) leave in one write. Uncorked, the frames went out in one write
 * and the end one tick later in another, and a second send costs more than anything else in the
 * response (a wake of the client on another CPU).
 * The response's `end()` uncorks it whole; the tick after is only for a body not flowing then.
 */
const endWith = (body: EventBody, frames: string) => {
  const destination = body.destination
  destination?.cork()
  if (frames !== "") body.push(frames)
  body.push(null)
  if (destination !== undefined) {
    process.nextTick(() => {
      if (destination.writableCorked > 0) destination.uncork()
    })
  }
}

const liveBody = <E>(
  first: EventBatch,
  read: Effect.Effect<EventBatch, E>,
  listen: Listen,
  run: (effect: Effect.Effect<EventBatch, E>, options: { onExit: (exit: Exit.Exit<EventBatch, E>) => void }) => unknown
): Readable => {
  let then = first.then
  // Whether there may be news not read yet: at first yes, for what was stored before listening began.
  let news = true
  let wanted = false
  let reading = false
  let closed = false
  const pump = () => {
    if (closed || reading || !wanted) return
    if (then === "wait" && !news) return
    news = false
    reading = true
    run(read, {
      onExit: (exit) => {
        reading = false
        if (closed) return
        if (Exit.isFailure(exit)) return void body.destroy(new Error(Cause.pretty(exit.cause)))
        then = exit.value.then
        if (then === "end") return endWith(body, exit.value.frames)
        if (exit.value.frames !== "") wanted = body.push(exit.value.frames)
        pump()
      }
    })
  }
  const stop = listen(() => {
    news = true
    pump()
  })
  const body = new EventBody({
    read() {
      wanted = true
      pump()
    },
    destroy(error, callback) {
      closed = true
      stop()
      callback(error)
    }
  })
  // Ended streams end their listening too (the platform's pipeline destroys the body at its end).
  body.once("end", () => {
    closed = true
    stop()
  })
  if (first.frames !== "") body.push(first.frames)
  return body
}
