/**
 * Keyed wake-ups: a follower of one key (an operation, an agent conversation) is woken by news of
 * that key only, instead of receiving every event of every machine and filtering it. A wake-up
 * carries nothing: the follower reads the database again, so several wake-ups seen as one, or one
 * for rows it has read already, lose nothing, and a follower can never fall behind.
 *
 * Two ways to follow: `listen` calls back on each piece of news (an event stream response pumps
 * its body from it without a fiber of its own), `watch` gives an effect to wait on (a long poll).
 */
import { Effect, type Scope } from "effect"

export interface Watch {
  /**
   * Completes once there may be news since the previous `next` (the first completes at once, so a
   * follower that read before it watched reads again); read the rows after it completes.
   */
  readonly next: Effect.Effect<void>
}

export interface Wakeups<K> {
  readonly wake: (key: K) => Effect.Effect<void>
  /** Calls `onNews` at each wake-up of `key` until the returned function is called. */
  readonly listen: (key: K, onNews: () => void) => () => void
  /** Watches `key` for the scope's lifetime. */
  readonly watch: (key: K) => Effect.Effect<Watch, never, Scope.Scope>
  /** How many follow `key` (a closed follower leaves nothing behind). */
  readonly watching: (key: K) => number
}

export const makeWakeups = <K>(): Wakeups<K> => {
  const listeners = new Map<K, Set<() => void>>()
  const listen = (key: K, onNews: () => void) => {
    // A function of its own per listener, so the same callback listening twice is two listeners.
    const listener = () => onNews()
    const set = listeners.get(key)
    if (set === undefined) listeners.set(key, new Set([listener]))
    else set.add(listener)
    return () => {
      const now = listeners.get(key)
      if (now === undefined) return
      now.delete(listener)
      if (now.size === 0) listeners.delete(key)
    }
  }
  return {
    wake: (key) =>
      Effect.sync(() => {
        const set = listeners.get(key)
        if (set !== undefined) { for (const listener of set) listener() }
      }),
    listen,
    watching: (key) => listeners.get(key)?.size ?? 0,
    watch: (key) =>
      Effect.map(
        Effect.acquireRelease(
          Effect.sync(() => {
            // Open at first: news published before the watch began is read by the first `next`.
            const latch = Effect.unsafeMakeLatch(true)
            return { latch, stop: listen(key, () => latch.unsafeOpen()) }
          }),
          ({ stop }) => Effect.sync(stop)
        ),
        // Closed before the follower reads: news published during its read opens it again.
        ({ latch }) => ({ next: Effect.zipRight(latch.await, latch.close) })
      )
  }
}
