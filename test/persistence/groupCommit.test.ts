/**
 * The group commit: `transaction` answers once its writes are durable; `applied` answers as soon as
 * its job ran, before the commit, and what is written after it commits with it or later. A second
 * connection to the same file is the outside observer (what a restarted svc would find).
 */
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Layer } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { GroupCommit } from "../../src/persistence/GroupCommit.js"

const insert = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO marks (name) VALUES (${name})`)

describe("group commit", () => {
  const file = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-group-commit-")), "db.sqlite")
  const layer = GroupCommit.layer.pipe(Layer.provideMerge(SqliteClient.layer({ filename: file })))

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
})
