/**
 * Sliding-window request limits kept in memory (one process owns its counters; a restart forgets
 * them, which only ever loosens a limit). Time comes from Clock, so tests move it with TestClock.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { RateLimited } from "./Errors.js"

export interface Limit {
  readonly limit: number
  readonly windowMillis: number
}

const make = Effect.sync(() => {
  const hits = new Map<string, Array<number>>()
  let checks = 0

  const prune = (now: number) => {
    for (const [key, times] of hits) {
      if (times.length === 0 || times[times.length - 1]! <= now - 24 * 3600_000) hits.delete(key)
    }
  }

  return {
    /** Counts one request under `key`; fails with `rate_limited` and the seconds to wait when over. */
    consume: (key: string, { limit, windowMillis }: Limit) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (++checks % 10_000 === 0) prune(now)
        const times = (hits.get(key) ?? []).filter((t) => t > now - windowMillis)
        if (times.length >= limit) {
          hits.set(key, times)
          const retryAfter = Math.max(1, Math.ceil((times[0]! + windowMillis - now) / 1000))
          return Effect.fail(
            new RateLimited({ detail: `Too many requests; retry in ${retryAfter} s`, retry_after_seconds: retryAfter })
          )
        }
        times.push(now)
        hits.set(key, times)
        return Effect.void
      })
  }
})

export class RateLimiter extends Context.Tag("svc/kernel/http/RateLimiter")<
  RateLimiter,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(RateLimiter, make)
}
