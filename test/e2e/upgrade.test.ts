/**
 * Upgrades: a data dir whose database has only the first migration (the oldest schema that ever
 * landed), holding a user in an organization, is opened by today's svc: every later migration runs,
 * the user and organization are kept, and the service works on it.
 */
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as Migrator from "@effect/sql/Migrator"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodePath from "node:path"
import { loader } from "../../src/kernel/sql/Migrations.js"
import { destroyMachines, run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { runningMachine } from "../support/Machines.js"
import { freePort, tempDir } from "../support/TestServer.js"

const organizationId = "01900000-0000-7000-8000-000000000001"
const userId = "01900000-0000-7000-8000-000000000002"

/** The database as the first release left it: migration 1 only, with one owner in one organization. */
const oldestDatabase = (file: string) =>
  Effect.gen(function*() {
    const first = Effect.map(loader, (all) => all.filter(([id]) => id === 1))
    assert.deepStrictEqual((yield* Migrator.make({})({ loader: first })).map(([id]) => id), [1])
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO users (id, email, created_at) VALUES (${userId}, 'old@example.com', 1)`
    yield* sql`INSERT INTO organizations (id, name, created_at) VALUES (${organizationId}, 'kept', 1)`
    yield* sql`INSERT INTO memberships (organization_id, user_id, role, joined_at)
      VALUES (${organizationId}, ${userId}, 'owner', 1)`
  }).pipe(Effect.provide(SqliteClient.layer({ filename: file })), Effect.scoped)

describe("upgrades", () => {
  it.scopedLive(
    "from the oldest landed schema: every migration runs and the data is kept",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        yield* Effect.addFinalizer(() => destroyMachines(dataDir, "sandbox"))
        yield* oldestDatabase(NodePath.join(dataDir, "svc.db"))
        const boot = yield* run(["admin", "bootstrap", "--email", "old@example.com", "--data-dir", dataDir])
        assert.strictEqual(boot.code, 0, boot.stderr)
        const answer = JSON.parse(boot.stdout)
        assert.deepStrictEqual([answer.user_id, answer.organization_id], [userId, organizationId], "found, not made")

        const port = yield* freePort
        yield* serve({ SVC_DATA_DIR: dataDir, SVC_PORT: String(port), SVC_RUNTIME: "sandbox" })
        const api = client(`http://127.0.0.1:${port}`, { key: answer.api_key })
        const me = yield* api("GET", "/v1/me")
        assert.strictEqual(me.status, 200)
        assert.strictEqual(me.body.user.email, "old@example.com")
        yield* runningMachine(api, "after-upgrade")
        const applied = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ n: number }>`SELECT COUNT(*) AS n FROM effect_sql_migrations`
        ).pipe(
          Effect.provide(SqliteClient.layer({ filename: NodePath.join(dataDir, "svc.db") })),
          Effect.scoped
        )
        assert.strictEqual(Number(applied[0]!.n), (yield* loader).length)
      }),
    120_000
  )
})
