/**
 * Server-sent event responses of persisted history then live, shared by operation and agent events.
 * The history is read before anything is watched: a stream that has ended already (the common
 * case for a client that comes late) is answered as one body, with no watch and no stream. Else
 * the reader watches its key's wake-ups (src/events/Wakeups.ts) and reads the database again at
 * each, writing what one read found as one chunk.
 */
import { HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Option, type Scope, Stream } from "effect"
import type { Watch } from "../events/Wakeups.js"

/** What one read of the persisted events found. */
export interface EventBatch {
  /** The SSE frames of the events read, in order (empty when none were new). */
  readonly frames: string
  /** `end`: the stream is complete; `more`: more are stored (a page was full); `wait`: wait for news. */
  readonly then: "end" | "more" | "wait"
}

const options = {
  contentType: "text/event-stream",
  headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
} as const

const encoder = new TextEncoder()

/**
 * The response for a reader: `read` reads the events after the last it read (it keeps its own
 * cursor), `watch` watches the wake-ups of what it follows.
 */
export const eventStreamResponse = <E>(
  read: Effect.Effect<EventBatch, E>,
  watch: Effect.Effect<Watch, never, Scope.Scope>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E> =>
  Effect.map(read, (first) =>
    first.then === "end"
      ? HttpServerResponse.text(first.frames, options)
      : HttpServerResponse.stream(live(first, read, watch), options))

const live = <E>(
  first: EventBatch,
  read: Effect.Effect<EventBatch, E>,
  watch: Effect.Effect<Watch, never, Scope.Scope>
) =>
  Stream.unwrapScoped(Effect.map(watch, (watching) => {
    let then = first.then
    // The watch starts open, so the first pull reads again what was stored before it began.
    const pull: Effect.Effect<Chunk.Chunk<Uint8Array>, Option.Option<E>> = Effect.suspend(() => {
      if (then === "end") return Effect.fail(Option.none())
      const read_ = then === "more" ? read : Effect.zipRight(watching.next, read)
      return Effect.flatMap(Effect.mapError(read_, Option.some), (batch) => {
        then = batch.then
        return batch.frames === "" ? pull : Effect.succeed(Chunk.of(encoder.encode(batch.frames)))
      })
    })
    const head = first.frames === "" ? Stream.empty : Stream.succeed(encoder.encode(first.frames))
    return Stream.concat(head, Stream.repeatEffectChunkOption(pull))
  }))
