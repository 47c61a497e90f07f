/**
 * Keyed wake-ups: a follower of one key (an operation, an agent conversation) is woken by news of
 * that key only, instead of receiving every event of every machine and filtering it. A wake-up
 * carries nothing: the follower reads the database again, so several wake-ups seen as one, or one
 * for rows it has read already, lose nothing, and a follower can never fall behind.
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
  /** Watches `key` for the scope's lifetime. */
  readonly watch: (key: K) => Effect.Effect<Watch, never, Scope.Scope>
  /** How many watches of `key` are open (a closed one leaves nothing behind). */
  readonly watching: (key: K) => number
}

export const makeWakeups = <K>(): Wakeups<K> => {
  // One latch per watch: open when news came since its follower's last `next`.
  const watchers = new Map<K, Set<Effect.Latch>>()
  const add = (key: K, latch: Effect.Latch) => {
    const latches = watchers.get(key)
    if (latches === undefined) watchers.set(key, new Set([latch]))
    else latches.add(latch)
  }
  const remove = (key: K, latch: Effect.Latch) => {
    const latches = watchers.get(key)
    if (latches === undefined) return
    latches.delete(latch)
    if (latches.size === 0) watchers.delete(key)
  }
  return {
    wake: (key) =>
      Effect.sync(() => {
        const latches = watchers.get(key)
        if (latches !== undefined) { for (const latch of latches) latch.unsafeOpen() }
      }),
    watching: (key) => watchers.get(key)?.size ?? 0,
    watch: (key) =>
      Effect.map(
        Effect.acquireRelease(
          Effect.sync(() => {
            const latch = Effect.unsafeMakeLatch(true)
            add(key, latch)
            return latch
          }),
          (latch) => Effect.sync(() => remove(key, latch))
        ),
        // Closed before the follower reads: news published during its read opens it again.
        (latch) => ({ next: Effect.zipRight(latch.await, latch.close) })
      )
  }
}
