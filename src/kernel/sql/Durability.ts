/**
 * When a commit is on disk. The connection commits with `synchronous=NORMAL`: a COMMIT writes the
 * transaction to the write-ahead log and returns without waiting for the disk, and the log is
 * flushed (`fdatasync`) here, on libuv's thread pool, while the event loop goes on. Whoever answers
 * for a commit waits for a flush that started after it (`syncThrough`), so every answer still comes
 * after its writes are durable, as with `synchronous=FULL`, without the event loop standing still
 * for the disk at every commit.
 *
 * Flushes are shared: one flush covers every commit made before it started, and the callers that
 * arrive while it runs share the next one.
 *
 * What this changes for readers: a commit is visible to other statements on the connection a moment
 * before it is durable (until its flush ends). Answers and the bus's subscribers wait for the flush;
 * a read (an event stream's included) that races a power loss may have seen a commit that the
 * restarted svc does not have. That is the same window as GroupCommit.applied, and it is why only
 * work that is safe to redo reads ahead of the disk.
 */
import { Context, Data, Effect, FiberRef } from "effect"

export interface DurabilityShape {
  /** Completes once the commit numbered `seq` (and every one before it) is on disk. */
  readonly syncThrough: (seq: number) => Effect.Effect<void>
  /** Completes once the commits this fiber made (`LastCommit`) are on disk. */
  readonly syncOwn: Effect.Effect<void>
  /** How many commits the connection has made. */
  readonly committed: () => number
}

export class Durability extends Context.Tag("svc/kernel/sql/Durability")<Durability, DurabilityShape>() {}

/** The number of the last commit the current fiber made (0: none), set by the connection. */
export const LastCommit = FiberRef.unsafeMake(0)

/** Why answers stop: the disk refused a flush, so nothing since the last good one is known to be there. */
export class FlushFailed extends Data.TaggedError("FlushFailed")<{ readonly cause: unknown }> {
  override get message() {
    return `the database log could not be flushed to disk: ${String(this.cause)}`
  }
}

/**
 * The bookkeeping of commits and flushes, around `flush` (which calls back once everything written
 * to the log before it was called is on disk). The connection calls `commit` after each commit.
 */
export const make = (flush: (done: (error: unknown) => void) => void) => {
  let committed = 0
  let durable = 0
  let flushing = false
  let waiters: Array<{ readonly seq: number; readonly resume: (effect: Effect.Effect<void>) => void }> = []

  const startFlush = () => {
    flushing = true
    const covers = committed
    flush((error) => {
      flushing = false
      if (error === null || error === undefined) durable = Math.max(durable, covers)
      const ready = waiters.filter((waiter) => waiter.seq <= covers)
      waiters = waiters.filter((waiter) => waiter.seq > covers)
      // A failed flush leaves its commits of unknown durability: their answers fail rather than lie.
      for (const waiter of ready) waiter.resume(error ? Effect.die(new FlushFailed({ cause: error })) : Effect.void)
      if (waiters.length > 0) startFlush()
    })
  }

  const syncThrough = (seq: number): Effect.Effect<void> =>
    Effect.suspend(() =>
      seq <= durable ? Effect.void : Effect.async<void>((resume) => {
        waiters.push({ seq, resume })
        if (!flushing) startFlush()
      })
    )

  const shape: DurabilityShape = {
    syncThrough,
    syncOwn: Effect.flatMap(FiberRef.get(LastCommit), syncThrough),
    committed: () => committed
  }
  return {
    shape,
    /** Counts a commit; answers its number. */
    commit: () => ++committed,
    /** Whether some commit is not known to be on disk yet. */
    pending: () => committed > durable
  }
}

/** For a database with nothing to flush (`:memory:`): every commit is as durable as it gets at once. */
export const immediate: DurabilityShape = {
  syncThrough: () => Effect.void,
  syncOwn: Effect.void,
  committed: () => 0
}
