/**
 * Two nodes over one database (docs/scale-out.md "Shared state"): two service contexts, each with a
 * data dir of its own, on one PostgreSQL database in the PostgreSQL pass. The same Idempotency-Key
 * sent to both at once makes one operation that both answer; creates racing an organization's
 * limit from both never pass it; a rate limit hit through one counts on the other. On SQLite (one writer, one node per file) both "nodes" are one
 * context, and the same races run within it.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, TestClock } from "effect"
import { AppConfig, type AppConfigShape, defaultLimits } from "../../src/kernel/config/AppConfig.js"
import { RateLimiter } from "../../src/kernel/http/RateLimiter.js"
import { Machines } from "../../src/machines/Machines.js"
import { failureTag, newMachine, owner, services } from "../support/Services.js"

/** Two nodes on one database: a second context on the first's PostgreSQL database, else the first again. */
const twoNodes = (overrides: Partial<AppConfigShape> = {}) =>
  Effect.gen(function*() {
    const a = yield* services({ hostId: "node-a", ...overrides })
    const url = Context.get(a, AppConfig).postgresUrl
    // A host of its own: two live nodes never share one (the second would take the first's lease).
    const b = url === undefined ? a : yield* services({ hostId: "node-b", ...overrides, postgresUrl: url })
    return [a, b] as const
  })

const count = (context: Context.Context<any>, query: string) =>
  Effect.flatMap(
    Effect.orDie(Context.get(context, SqlClient.SqlClient).unsafe<{ n: number }>(query)),
    (rows) => Effect.succeed(Number(rows[0]!.n))
  )

describe("two nodes on one database", () => {
  it.scoped(
    "the same Idempotency-Key sent to both at once makes one operation, which both answer",
    () =>
      Effect.gen(function*() {
        const [a, b] = yield* twoNodes()
        const alice = yield* owner(a, "alice@example.com")
        const keys = Array.from({ length: 8 }, (_, i) => `key-${i}`)
        const answers = yield* Effect.forEach(keys, (key) =>
          Effect.all(
            [a, b].map((node) =>
              Context.get(node, Machines).create({ ...alice, idempotencyKey: key }, newMachine(`m-${key}`))
            ),
            { concurrency: "unbounded" }
          ), { concurrency: "unbounded" })
        for (const [first, second] of answers) assert.deepStrictEqual(second, first)
        assert.strictEqual(new Set(answers.map(([first]) => first!.operation_id)).size, keys.length)
        assert.strictEqual(yield* count(a, "SELECT COUNT(*) AS n FROM operations"), keys.length)
        assert.strictEqual(yield* count(b, "SELECT COUNT(*) AS n FROM machines"), keys.length)
      }),
    90_000
  )

  it.scoped("creates racing an organization's limit from both nodes never pass it", () =>
    Effect.gen(function*() {
      const limit = 3
      const [a, b] = yield* twoNodes({
        limits: { ...defaultLimits, unlimited: { concurrent_machines: limit, starts_per_hour: 100 } }
      })
      const alice = yield* owner(a, "alice@example.com")
      const outcomes = yield* Effect.all(
        Array.from({ length: 12 }, (_, i) =>
          failureTag(Context.get(i % 2 === 0 ? a : b, Machines).create(alice, newMachine(`m${i}`, true)))),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(
        outcomes.filter((outcome) =>
          outcome === "succeeded"
        ).length,
        limit
      )
      assert.deepStrictEqual([...new Set(outcomes.filter((outcome) => outcome !== "succeeded"))], ["limit_exceeded"])
      assert.strictEqual(
        yield* count(a, "SELECT COUNT(*) AS n FROM machines WHERE projected_state = 'running'"),
        limit
      )
    }), 90_000)

  it.scoped(
    "a rate limit hit through one node counts on the other, also when both count at once",
    () =>
      Effect.gen(function*() {
        const [a, b] = yield* twoNodes()
        const limit = { limit: 5, windowMillis: 60_000 }
        const consume = (node: Context.Context<any>, key: string) =>
          failureTag(Context.get(node, RateLimiter).consume(key, limit))
        for (let i = 0; i < 3; i++) assert.strictEqual(yield* consume(a, "one"), "succeeded")
        for (let i = 0; i < 2; i++) assert.strictEqual(yield* consume(b, "one"), "succeeded")
        assert.strictEqual(yield* consume(b, "one"), "rate_limited")
        assert.strictEqual(yield* consume(a, "one"), "rate_limited")
        // Another key counts its own; at once from both nodes, the limit still holds.
        const racing = yield* Effect.all(
          Array.from({ length: 12 }, (_, i) => consume(i % 2 === 0 ? a : b, "two")),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(racing.filter((outcome) => outcome === "succeeded").length, limit.limit)
        // Once the window has passed, both count again.
        yield* TestClock.adjust("61 seconds")
        assert.strictEqual(yield* consume(b, "one"), "succeeded")
        assert.strictEqual(yield* consume(a, "two"), "succeeded")
      }),
    90_000
  )
})
