/**
 * svc's PostgreSQL client on a real server (test/support/Postgres.ts): the facts the scale-out
 * design rests on (extensions.md §21, docs/architecture.md), checked rather than assumed:
 * int8 read as numbers, notifications delivered after the commit (never from a rolled-back
 * transaction), session advisory locks exclusive between connections, and a pool that reconnects
 * after the server restarts.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Context, Effect, Fiber, Layer, Option, Schedule, Stream } from "effect"
import * as Postgres from "../../../src/kernel/sql/Postgres.js"
import { startPostgres } from "../../support/Postgres.js"

const client = (url: string) =>
  Layer.build(Postgres.layer({ url, maxConnections: 4 })).pipe(
    Effect.map((context) => ({
      sql: Context.get(context, SqlClient.SqlClient),
      pg: Context.get(context, PgClient.PgClient)
    }))
  )

describe("PostgreSQL client", { timeout: 60_000 }, () => {
  it.scopedLive("reads int8 as numbers, notifies after commit only, locks per session, reconnects", () =>
    Effect.gen(function*() {
      const server = yield* startPostgres
      const url = yield* server.database("facts")
      const a = yield* client(url)
      const b = yield* client(url)

      // int8 and count(*) as numbers, as better-sqlite3 reads them.
      const [row] = yield* a.sql<{ n: number; c: number }>`
        SELECT 9007199254740991::int8 AS n, count(*) AS c FROM generate_series(1, 3)`
      assert.deepStrictEqual(row, { n: 9007199254740991, c: 3 })

      // Notifications: one from a committed transaction arrives; one from a rolled-back one never does
      // (the committed one is sent after it, so its arrival shows the other was not merely late).
      const received = yield* b.pg.listen("wake").pipe(Stream.take(1), Stream.runCollect, Effect.fork)
      // LISTEN starts with the stream: rounds go on until one arrives. In each round the rolled-back
      // one is sent first, so the first to arrive is the committed one only if rollbacks send nothing.
      const round = Effect.gen(function*() {
        yield* a.sql.withTransaction(Postgres.notify("wake", "rolled-back").pipe(Effect.zipRight(Effect.fail("undo"))))
          .pipe(
            Effect.flip
          )
        yield* a.sql.withTransaction(Postgres.notify("wake", "committed"))
      }).pipe(Effect.provideService(SqlClient.SqlClient, a.sql))
      yield* round.pipe(
        Effect.zipRight(Effect.sleep("50 millis")),
        Effect.repeat({ while: () => Effect.map(Fiber.poll(received), Option.isNone) })
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Fiber.join(received)), ["committed"])

      // A session advisory lock held on one connection is refused to another until released.
      const lock = (sql: SqlClient.SqlClient, name: string) =>
        sql<{ held: boolean }>`SELECT pg_try_advisory_lock(hashtext(${name})) AS held`.pipe(
          Effect.map((rows) => rows[0]!.held)
        )
      const taken = yield* a.sql.reserve.pipe(
        Effect.flatMap((connection) =>
          Effect.map(
            connection.executeValues("SELECT pg_try_advisory_lock(hashtext('meter'))", []),
            (rows) => rows[0]![0]
          )
        )
      )
      assert.strictEqual(taken, true)
      assert.strictEqual(yield* lock(b.sql, "meter"), false, "another session cannot take it")

      // The server restarts: the pool's next statement reconnects.
      yield* server.stop
      yield* server.start
      // (connections the pool held are dead: each is dropped at its first failed statement)
      const [again] = yield* Effect.retry(a.sql<{ one: number }>`SELECT 1::int8 AS one`, {
        schedule: Schedule.spaced("20 millis"),
        times: 10
      })
      assert.deepStrictEqual(again, { one: 1 })
    }))
})
