/**
 * Migrations are the numbered SQL files in `schema/migrations`, applied in order at start by the
 * `@effect/sql` Migrator. Statements are separated by a `;` at the end of a line, because the
 * SQLite driver prepares one statement at a time.
 */
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"

export const migrationsDir = fileURLToPath(new URL("../../schema/migrations", import.meta.url))

export const statementsOf = (text: string): ReadonlyArray<string> =>
  text
    .split(/;\s*$/m)
    .map((statement) => statement.replace(/^\s*--.*$/gm, "").trim())
    .filter((statement) => statement.length > 0)

const migration = (text: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const statement of statementsOf(text)) {
      yield* sql.unsafe(statement)
    }
  })

/** `0001_identity.sql` becomes migration 1 named `identity`. */
export const loader: Migrator.Loader = Effect.sync(() =>
  NodeFs.readdirSync(migrationsDir)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .sort()
    .map((file) => {
      const [, id, name] = /^(\d+)_(.+)\.sql$/.exec(file)!
      const text = NodeFs.readFileSync(NodePath.join(migrationsDir, file), "utf8")
      return [Number(id), name!, Effect.succeed(migration(text))] as const
    })
)
