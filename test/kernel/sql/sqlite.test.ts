/**
 * The connection's two ways in (src/kernel/sql/Sqlite.ts): a prepared statement run directly must
 * behave as a SqlClient statement would, inside and outside transactions.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberRef, Layer, Option, Stream } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Durability, LastCommit } from "../../../src/kernel/sql/Durability.js"
import { Prepared } from "../../../src/kernel/sql/Sqlite.js"
import * as Sqlite from "../../../src/kernel/sql/Sqlite.js"

/** Creates the table the tests use; answers the connection's two ways in. */
const withTable = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`
  return { sql, prepared: yield* Prepared }
})

const ids = Effect.flatMap(Prepared, (prepared) => prepared.all<{ id: number }>("SELECT id FROM t ORDER BY id"))

describe("Sqlite", () => {
  it.scopedLive("a file's commits are numbered in the fiber that made them, and flushed before syncOwn answers", () =>
    Effect.gen(function*() {
      const file = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-sqlite-")), "db.sqlite")
      let flushes = 0
      const layer = Sqlite.layer(file).pipe(
        Layer.provide(
          Layer.succeed(Sqlite.FlushHook, (flush: Sqlite.Flush): Sqlite.Flush => (done) => (flushes++, flush(done)))
        )
      )
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const prepared = yield* Prepared
        const durability = yield* Durability
        const synchronous = yield* prepared.first<{ synchronous: number }>("PRAGMA synchronous")
        assert.strictEqual(Option.getOrThrow(synchronous).synchronous, 1, "NORMAL: the flush is ours")
        yield* withTable
        const afterTable = yield* FiberRef.get(LastCommit)
        assert.isAbove(afterTable, 0, "a statement outside a transaction is a commit")
        yield* ids
        assert.strictEqual(yield* FiberRef.get(LastCommit), afterTable, "a read is none")
        // Writes inside a transaction count once, at its COMMIT, in the fiber that ran it (and in
        // whoever joins that fiber).
        const writer = yield* Effect.fork(
          sql.withTransaction(Effect.gen(function*() {
            yield* prepared.run("INSERT INTO t (id, v) VALUES (?, ?)", 1, "a")
            yield* sql`INSERT INTO t (id, v) VALUES (2, 'b')`
            return yield* FiberRef.get(LastCommit)
          })).pipe(Effect.zip(FiberRef.get(LastCommit)))
        )
        const [during, after] = yield* Fiber.join(writer)
        assert.strictEqual(during, afterTable, "nothing counted before the COMMIT")
        const committed = durability.committed()
        assert.strictEqual(after, afterTable + 1)
        assert.strictEqual(committed, after)
        assert.strictEqual(yield* FiberRef.get(LastCommit), after, "joined with the fiber")
        const before = flushes
        yield* durability.syncThrough(committed)
        assert.strictEqual(flushes, before + 1)
        yield* durability.syncOwn
        assert.strictEqual(flushes, before + 1, "already on disk: no flush")
      }).pipe(Effect.provide(layer))
    }))

  it.live("a transaction that cannot begin gives its lock back", () =>
    Effect.gen(function*() {
      const { prepared } = yield* withTable
      // A transaction opened behind the lock's back: BEGIN fails inside it.
      yield* prepared.run("BEGIN")
      const refused = yield* Effect.exit(prepared.transaction(Effect.void))
      assert.isTrue(Exit.isFailure(refused))
      yield* prepared.run("ROLLBACK")
      yield* prepared.transaction(prepared.run("INSERT INTO t (id, v) VALUES (?, ?)", 1, "a")).pipe(
        Effect.timeoutFail({ duration: "2 seconds", onTimeout: () => "the lock was kept" })
      )
      assert.deepStrictEqual(yield* ids, [{ id: 1 }])
    }).pipe(Effect.provide(Sqlite.layer(":memory:"))))

  it.effect("a direct statement waits while another fiber holds a transaction, then sees what it committed", () =>
    Effect.gen(function*() {
      const { prepared, sql } = yield* withTable
      const inside = yield* Deferred.make<void>()
      const finish = yield* Deferred.make<void>()
      const writer = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* prepared.run("INSERT INTO t (id, v) VALUES (?, ?)", 1, "a")
        yield* Deferred.succeed(inside, undefined)
        yield* Deferred.await(finish)
      })))
      yield* Deferred.await(inside)
      const reader = yield* Effect.fork(ids)
      const viaClient = yield* Effect.fork(sql<{ id: number }>`SELECT id FROM t`)
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(reader)), "the direct read ran inside another fiber's transaction")
      assert.isTrue(Option.isNone(yield* Fiber.poll(viaClient)))
      yield* Deferred.succeed(finish, undefined)
      yield* Fiber.join(writer)
      assert.deepStrictEqual(yield* Fiber.join(reader), [{ id: 1 }])
      assert.deepStrictEqual(yield* Fiber.join(viaClient), [{ id: 1 }])
    }).pipe(Effect.provide(Sqlite.layer(":memory:"))))

  it.effect("direct writes belong to the fiber's transaction and savepoint: they roll back with them", () =>
    Effect.gen(function*() {
      const { prepared, sql } = yield* withTable
      const insert = (id: number) => prepared.insert("t", { id, v: `v${id}` })
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* insert(1)
        // A failing inner job (as in the group commit) rolls back alone.
        yield* Effect.exit(sql.withTransaction(Effect.zipRight(insert(2), Effect.fail("refused"))))
        yield* prepared.updateById("t", "3", {})
        yield* insert(3)
      }))
      yield* Effect.exit(sql.withTransaction(Effect.zipRight(insert(4), Effect.fail("refused"))))
      assert.deepStrictEqual(yield* ids, [{ id: 1 }, { id: 3 }])
      yield* sql`UPDATE t SET v = ${"changed"} WHERE id = ${1}`
      yield* prepared.run("UPDATE t SET v = ? WHERE id = ?", "direct", 3)
      assert.deepStrictEqual(
        yield* prepared.first<{ v: string }>("SELECT v FROM t WHERE id = ?", 1),
        Option.some({ v: "changed" })
      )
      assert.deepStrictEqual(
        yield* sql<{ v: string }>`SELECT v FROM t WHERE id = ${3}`,
        [{ v: "direct" }]
      )
      assert.isTrue(Option.isNone(yield* prepared.first("SELECT v FROM t WHERE id = ?", 9)))
    }).pipe(Effect.provide(Sqlite.layer(":memory:"))))

  it.effect("runMany runs one write per parameter list in the fiber's transaction", () =>
    Effect.gen(function*() {
      const { prepared, sql } = yield* withTable
      const insert = "INSERT INTO t (id, v) VALUES (?, ?)"
      assert.strictEqual(yield* prepared.runMany(insert, [[1, "a"], [2, "b"], [3, "c"]]), 3)
      assert.strictEqual(yield* prepared.runMany(insert, []), 0)
      // Rolled back with the transaction it ran in, the later rows with the failing one.
      const failed = yield* Effect.exit(sql.withTransaction(prepared.runMany(insert, [[4, "d"], [1, "again"]])))
      assert.isTrue(Exit.isFailure(failed))
      const update = "UPDATE t SET v = ? WHERE id = ?"
      assert.strictEqual(yield* prepared.runMany(update, [["x", 1], ["y", 3], ["z", 9]]), 2)
      assert.deepStrictEqual(yield* prepared.all("SELECT id, v FROM t ORDER BY id"), [
        { id: 1, v: "x" },
        { id: 2, v: "b" },
        { id: 3, v: "y" }
      ])
    }).pipe(Effect.provide(Sqlite.layer(":memory:"))))

  it.effect("a statement's stream yields its rows, and other statements may run while it is consumed", () =>
    Effect.gen(function*() {
      const { sql } = yield* withTable
      yield* sql`INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')`
      const seen: Array<string> = []
      yield* Stream.runForEach(
        sql<{ id: number; v: string }>`SELECT id, v FROM t ORDER BY id`.stream,
        (row) =>
          Effect.map(sql<{ n: number }>`SELECT COUNT(*) AS n FROM t`, ([count]) => seen.push(`${row.v}${count!.n}`))
      )
      assert.deepStrictEqual(seen, ["a3", "b3", "c3"])
    }).pipe(Effect.provide(Sqlite.layer(":memory:"))))
})
