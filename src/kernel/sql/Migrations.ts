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
import { ddlForPostgres } from "./Dialect.js"

/** `schema/migrations` of the checkout or package: the first one up from this module (source or bundle). */
const findMigrations = (from: string): string => {
  const candidate = NodePath.join(from, "schema", "migrations")
  if (NodeFs.existsSync(candidate)) return candidate
  const parent = NodePath.dirname(from)
  if (parent === from) throw new Error("schema/migrations not found above " + fileURLToPath(import.meta.url))
  return findMigrations(parent)
}

/** Defined by bin/build.mjs in the single executable only: each migration file's text by its name. */
declare const SVC_MIGRATIONS: Readonly<Record<string, string>> | undefined

/** The migration files by name: embedded in the single executable, else read from the folder. */
const migrationFiles = (): ReadonlyArray<readonly [file: string, text: string]> => {
  if (typeof SVC_MIGRATIONS !== "undefined") return Object.entries(SVC_MIGRATIONS)
  const folder = findMigrations(NodePath.dirname(fileURLToPath(import.meta.url)))
  return NodeFs.readdirSync(folder).map((file) => [file, NodeFs.readFileSync(NodePath.join(folder, file), "utf8")])
}

export const statementsOf = (text: string): ReadonlyArray<string> =>
  text
    .split(/;\s*$/m)
    .map((statement) => statement.replace(/^\s*--.*$/gm, "").trim())
    .filter((statement) => statement.length > 0)

const migration = (text: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = sql.onDialectOrElse({ pg: () => ddlForPostgres, orElse: () => (statement: string) => statement })
    for (const statement of statementsOf(text)) {
      yield* sql.unsafe(dialect(statement))
    }
  })

/** `0001_identity.sql` becomes migration 1 named `identity`. */
export const loader: Migrator.Loader = Effect.sync(() =>
  migrationFiles()
    .filter(([file]) => /^\d+_.+\.sql$/.test(file))
    .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
    .map(([file, text]) => {
      const [, id, name] = /^(\d+)_(.+)\.sql$/.exec(file)!
      return [Number(id), name!, Effect.succeed(migration(text))] as const
    })
)

/**
 * Migrations written on parallel branches can land with an id below one a database already has
 * (0005 landing after 0007). The Migrator only runs ids above the highest applied one, so such a
 * migration would never run there: this runs every missing id below it first, in id order, and
 * records it the way the Migrator does. Fresh databases have no gaps and skip straight past.
 */
export const applyMissing = (migrations: Migrator.Loader = loader, table = "effect_sql_migrations") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const exists = yield* sql.onDialectOrElse({
      pg: () => sql<{ n: number }>`SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_name = ${table}`,
      orElse: () => sql<{ n: number }>`SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ${table}`
    })
    if (Number(exists[0]?.n ?? 0) === 0) return []
    const applied = new Set(
      (yield* sql<{ migration_id: number }>`SELECT migration_id FROM ${sql(table)}`).map((row) => row.migration_id)
    )
    const latest = Math.max(0, ...applied)
    const missing = (yield* Effect.orDie(migrations)).filter(([id]) => id < latest && !applied.has(id))
    for (const [id, name, load] of missing) {
      yield* sql.withTransaction(Effect.gen(function*() {
        // Our loader's migrations need only the SqlClient (see `migration` above).
        yield* Effect.orDie(Effect.flatten(load) as Effect.Effect<unknown, unknown, SqlClient.SqlClient>)
        yield* sql`INSERT INTO ${sql(table)} ${sql.insert({ migration_id: id, name })}`
      }))
      yield* Effect.logWarning("applied a migration that landed after a later one").pipe(
        Effect.annotateLogs({ migration_id: id, migration_name: name })
      )
    }
    return missing.map(([id, name]) => [id, name] as const)
  })
