/**
 * Migrations that land out of order (written on parallel branches): one with an id below the
 * highest applied still runs, once, and a fresh database runs everything through the Migrator.
 */
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as Migrator from "@effect/sql/Migrator"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { applyMissing } from "../../src/persistence/Migrations.js"

const table = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`CREATE TABLE ${name} (id INTEGER)`))

const loaderOf = (ids: ReadonlyArray<number>): Migrator.Loader =>
  Effect.succeed(ids.map((id) => [id, `t${id}`, Effect.succeed(table(`t${id}`))] as const))

const tables = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 't%' ORDER BY name`
).pipe(Effect.map((rows) => rows.map((row) => row.name)))

describe("migrations", () => {
  it.effect("a migration that landed below the latest applied one runs once; the rest go through the Migrator", () =>
    Effect.gen(function*() {
      // A database migrated before 2 existed: 1 and 3 are applied.
      yield* Migrator.make({})({ loader: loaderOf([1, 3]) })
      assert.deepStrictEqual(yield* tables, ["t1", "t3"])
      // Then 2 (and 4) land.
      const ran = yield* applyMissing(loaderOf([1, 2, 3, 4]))
      assert.deepStrictEqual(ran, [[2, "t2"]])
      yield* Migrator.make({})({ loader: loaderOf([1, 2, 3, 4]) })
      assert.deepStrictEqual(yield* tables, ["t1", "t2", "t3", "t4"])
      // Nothing runs twice.
      assert.deepStrictEqual(yield* applyMissing(loaderOf([1, 2, 3, 4])), [])
      assert.deepStrictEqual(yield* Migrator.make({})({ loader: loaderOf([1, 2, 3, 4]) }), [])
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))))

  it.effect("a fresh database has nothing missing", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* applyMissing(loaderOf([1, 2])), [])
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))))
})
