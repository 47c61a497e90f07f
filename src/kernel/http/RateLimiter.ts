/**
 * Sliding-window request limits, counted in the database: every node on one database counts the
 * same requests (docs/scale-out.md), and a restart forgets nothing. Only sign-in and device-grant
 * routes are limited, so a counted request costs a short transaction, never on an accept's path.
 * Time comes from Clock, so tests move it with TestClock.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { makeRowLocks } from "../sql/RowLocks.js"
import { RateLimited } from "./Errors.js"

export interface Limit {
  readonly limit: number
  readonly windowMillis: number
}

/** The longest window a limit may have: hits older than this are removed now and then. */
const longestWindowMillis = 24 * 3600_000

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const locks = yield* makeRowLocks
  let checks = 0

  /**
   * The seconds to wait when `key` has `limit` hits in the window, else undefined and the hit is
   * counted. The key stays locked until the commit: two nodes counting the same key take turns.
   */
  const count = (key: string, { limit, windowMillis }: Limit, now: number) =>
    Effect.gen(function*() {
      yield* locks.name(`rate limit ${key}`)
      const [window] = yield* sql<{ hits: number; first: number | null }>`SELECT COUNT(*) AS hits, MIN(hit_at) AS first
        FROM rate_limit_hits WHERE limit_key = ${key} AND hit_at > ${now - windowMillis}`
      if (window !== undefined && Number(window.hits) >= limit) {
        return Math.max(1, Math.ceil((Number(window.first) + windowMillis - now) / 1000))
      }
      yield* sql`INSERT INTO rate_limit_hits (limit_key, hit_at) VALUES (${key}, ${now})`
      return undefined
    }).pipe(sql.withTransaction, Effect.orDie)

  return {
    /** Counts one request under `key`; fails with `rate_limited` and the seconds to wait when over. */
    consume: (key: string, limit: Limit) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (++checks % 1_000 === 0) {
          yield* Effect.orDie(sql`DELETE FROM rate_limit_hits WHERE hit_at <= ${now - longestWindowMillis}`)
        }
        const retryAfter = yield* count(key, limit, now)
        if (retryAfter !== undefined) {
          return yield* new RateLimited({
            detail: `Too many requests; retry in ${retryAfter} s`,
            retry_after_seconds: retryAfter
          })
        }
      })
  }
})

export class RateLimiter extends Context.Tag("svc/kernel/http/RateLimiter")<
  RateLimiter,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(RateLimiter, make)
}
