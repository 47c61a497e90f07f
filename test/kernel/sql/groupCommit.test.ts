/**
 * The group commit: `transaction` answers once its writes are durable (committed, and the log flushed
 * by src/kernel/sql/Durability.ts); `applied` answers as soon as its job ran, before the flush. A second
 * connection to the same file is the outside observer (what a restarted svc would find). Jobs that
 * share a commit still succeed and fail alone, and a job may open transactions of its own.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Context, Effect, Either, Exit, Fiber, Layer, Option } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { GroupCommit } from "../../../src/kernel/sql/GroupCommit.js"
import { Prepared } from "../../../src/kernel/sql/Sqlite.js"
import * as Sqlite from "../../../src/kernel/sql/Sqlite.js"

const insert = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO marks (name) VALUES (${name})`)

describe("group commit", () => {
  const file = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-group-commit-")), "db.sqlite")

  it.scopedLive("transaction answers once its commit is flushed, applied before; batches commit while a flush runs", () =>
    Effect.gen(function*() {
      // Flushes of the log are held back while `holding`, and let go by hand.
      let holding = false
      const held: Array<() => void> = []
      const wrapFlush = (flush: Sqlite.Flush): Sqlite.Flush => (done) =>
        holding ? void held.push(() => flush(done)) : flush(done)
      const database = Sqlite.layer(file).pipe(Layer.provide(Layer.succeed(Sqlite.FlushHook, wrapFlush)))
      const context = yield* Layer.build(GroupCommit.layer.pipe(Layer.provideMerge(database)))
      const commit = Context.get(context, GroupCommit)
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* sql`CREATE TABLE marks (name TEXT)`
      const outside = new Database(file, { readonly: true })
      yield* Effect.addFinalizer(() => Effect.sync(() => outside.close()))
      const seen = () => outside.prepare("SELECT name FROM marks ORDER BY rowid").all().map((row: any) => row.name)
      const until = (done: () => boolean) =>
        Effect.repeat(Effect.sleep("1 millis"), { until: done }).pipe(Effect.timeout("5 seconds"))

      holding = true
      yield* commit.applied(insert("claim"))
      // `committed` runs once the job is readable, while its flush is still held.
      let readableInHook: ReadonlyArray<string> = []
      const settle = yield* Effect.fork(
        commit.transaction(insert("settle"), () => Effect.sync(() => (readableInHook = seen())))
      )
      yield* until(() => seen().includes("settle"))
      // Committed (another connection reads it) but its flush is held: not answered yet.
      assert.deepStrictEqual(seen(), ["claim", "settle"])
      assert.isTrue(Option.isNone(yield* Fiber.poll(settle)), "answered before its flush")
      yield* until(() => readableInHook.length > 0)
      assert.deepStrictEqual(readableInHook, ["claim", "settle"])
      // The next batch commits while that flush is still running; it waits for a flush of its own.
      const after = yield* Effect.fork(commit.transaction(insert("after")))
      yield* until(() => seen().includes("after"))
      assert.isTrue(Option.isNone(yield* Fiber.poll(after)))
      assert.isTrue(held.length === 1, "one flush at a time")
      // The first flush ends: it covers `settle` only; `after` shares the one that starts next.
      holding = false
      held.shift()!()
      yield* Fiber.join(settle)
      yield* Fiber.join(after)
      assert.deepStrictEqual(held, [])

      // A failing job rolls back alone, early or not, alone in its commit (no savepoint) or not.
      const failed = yield* Effect.either(commit.applied(Effect.zipRight(insert("half"), Effect.fail("no"))))
      assert.isTrue(failed._tag === "Left")
      const refused = yield* Effect.either(commit.transaction(Effect.zipRight(insert("refused"), Effect.fail("no"))))
      assert.deepStrictEqual(refused, Either.left("no"))
      const died = yield* Effect.exit(commit.transaction(Effect.zipRight(insert("died"), Effect.dieMessage("broken"))))
      assert.isTrue(Exit.isFailure(died))
      yield* commit.transaction(insert("last"))
      assert.deepStrictEqual(seen(), ["claim", "settle", "after", "last"])
    }))

  it.scoped("concurrent jobs share a commit; a failing one rolls back alone, nested transactions included", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const prepared = yield* Prepared
      const commit = yield* GroupCommit
      yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY)`
      const put = (id: number) => prepared.insert("t", { id })
      const [one, refused, nested, innerRefused, died, six] = yield* Effect.all([
        Effect.either(commit.transaction(Effect.as(put(1), "one"))),
        Effect.either(commit.transaction(Effect.zipRight(put(2), Effect.fail("refused")))),
        Effect.either(commit.transaction(Effect.as(sql.withTransaction(Effect.zipRight(put(3), put(4))), "nested"))),
        Effect.either(commit.transaction(sql.withTransaction(Effect.zipRight(put(5), Effect.fail("inner refused"))))),
        Effect.exit(commit.transaction(Effect.zipRight(put(7), Effect.dieMessage("broken")))),
        Effect.either(commit.transaction(Effect.as(put(6), "six")))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(one, Either.right("one"))
      assert.deepStrictEqual(refused, Either.left("refused"))
      assert.deepStrictEqual(nested, Either.right("nested"))
      assert.deepStrictEqual(innerRefused, Either.left("inner refused"))
      assert.isTrue(Exit.isFailure(died))
      assert.deepStrictEqual(six, Either.right("six"))
      const ids = yield* prepared.all<{ id: number }>("SELECT id FROM t ORDER BY id")
      assert.deepStrictEqual(ids.map((row) => row.id), [1, 3, 4, 6])
      // Nothing is left open: a statement outside any job runs at once.
      assert.deepStrictEqual(yield* prepared.run("DELETE FROM t"), 4)
    }).pipe(Effect.provide(GroupCommit.layer.pipe(Layer.provideMerge(Sqlite.layer(":memory:"))))))
})
