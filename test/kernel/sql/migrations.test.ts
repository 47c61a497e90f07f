/**
 * Migrations that land out of order (written on parallel branches): one with an id below the
 * highest applied still runs, once, and a fresh database runs everything through the Migrator.
 */
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as Migrator from "@effect/sql/Migrator"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { applyMissing, loader } from "../../../src/kernel/sql/Migrations.js"

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

  it.effect("0009 merges the agent routes' idempotency keys into idempotency_keys; a key on both sides keeps its operation", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const upTo = (last: number) => Effect.map(loader, (all) => all.filter(([id]) => id <= last))
      yield* Migrator.make({})({ loader: upTo(8) })
      yield* sql`INSERT INTO idempotency_keys VALUES ('org', 'both', 'f-op', 'op-1', 1), ('org', 'op', 'f-op2', 'op-2', 2)`
      yield* sql`INSERT INTO agent_idempotency_keys VALUES ('org', 'both', 'f-turn', 'turn-1', NULL, 3),
        ('org', 'steer', 'f-steer', 'turn-2', 'input-1', 4)`
      yield* Migrator.make({})({ loader })
      const rows = yield* sql`SELECT idempotency_key, fingerprint, operation_id, turn_id, input_id, created_at
        FROM idempotency_keys ORDER BY created_at`
      assert.deepStrictEqual(rows, [
        {
          idempotency_key: "both",
          fingerprint: "f-op",
          operation_id: "op-1",
          turn_id: null,
          input_id: null,
          created_at: 1
        },
        {
          idempotency_key: "op",
          fingerprint: "f-op2",
          operation_id: "op-2",
          turn_id: null,
          input_id: null,
          created_at: 2
        },
        {
          idempotency_key: "steer",
          fingerprint: "f-steer",
          operation_id: null,
          turn_id: "turn-2",
          input_id: "input-1",
          created_at: 4
        }
      ])
      const left = yield* sql`SELECT name FROM sqlite_master WHERE name = 'agent_idempotency_keys'`
      assert.deepStrictEqual(left, [])
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))))
})
