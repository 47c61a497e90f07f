/**
 * The group commit: `transaction` answers once its writes are durable; `applied` answers as soon as
 * its job ran, before the commit, and what is written after it commits with it or later. A second
 * connection to the same file is the outside observer (what a restarted svc would find). Jobs that
 * share a commit still succeed and fail alone, and a job may open transactions of its own.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Either, Exit, Layer } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { GroupCommit } from "../../src/persistence/GroupCommit.js"
import { Prepared } from "../../src/persistence/Sqlite.js"
import * as Sqlite from "../../src/persistence/Sqlite.js"

const insert = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO marks (name) VALUES (${name})`)

describe("group commit", () => {
  const file = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-group-commit-")), "db.sqlite")
  const layer = GroupCommit.layer.pipe(Layer.provideMerge(Sqlite.layer(file)))

  it.scoped("applied answers before its commit is durable; a later transaction commits it too", () =>
    Effect.gen(function*() {
      const commit = yield* GroupCommit
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE marks (name TEXT)`
      const outside = new Database(file, { readonly: true })
      yield* Effect.addFinalizer(() => Effect.sync(() => outside.close()))
      const seen = () => outside.prepare("SELECT name FROM marks ORDER BY rowid").all().map((row: any) => row.name)

      yield* commit.applied(insert("claim"))
      assert.deepStrictEqual(seen(), [], "answered before the commit")
      yield* commit.transaction(insert("settle"))
      assert.deepStrictEqual(seen(), ["claim", "settle"])

      // A failing job rolls back alone, early or not.
      const failed = yield* Effect.either(commit.applied(Effect.zipRight(insert("half"), Effect.fail("no"))))
      assert.isTrue(failed._tag === "Left")
      yield* commit.transaction(insert("after"))
      assert.deepStrictEqual(seen(), ["claim", "settle", "after"])
    }).pipe(Effect.provide(layer)))

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
