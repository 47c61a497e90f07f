/**
 * The one SqlClient of the process: SQLite through better-sqlite3 (WAL, foreign keys, a busy timeout
 * so that `svc admin bootstrap` can write while the server runs, and commits flushed to disk before
 * anyone is answered: src/kernel/sql/Durability.ts), with the
 * migrations of `schema/migrations` applied before anything else uses it. The same connection is
 * also `Prepared`, the direct path for hot statements (src/kernel/sql/Sqlite.ts).
 */
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { Cause, Data, Effect, Layer } from "effect"
import * as NodePath from "node:path"
import { AppConfig } from "../config/AppConfig.js"
import { makeFolders } from "../Folders.js"
import { privateDatabaseFile } from "./FileModes.js"
import { applyMissing, loader } from "./Migrations.js"
import * as PostgresDatabase from "./PostgresDatabase.js"
import * as Sqlite from "./Sqlite.js"

const migrate = Effect.zipRight(applyMissing(), Migrator.make({})({ loader }))

/** Nodes starting together over one PostgreSQL: one applies the migrations, the others wait. */
const migrateOnce = PostgresDatabase.withAdvisoryLock("svc migrations")(migrate)

const pragmas = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe("PRAGMA foreign_keys = ON")
  yield* sql.unsafe("PRAGMA busy_timeout = 5000")
  // Savepoint and statement journals in memory rather than temporary files: every group commit
  // job and every nested transaction writes one.
  yield* sql.unsafe("PRAGMA temp_store = MEMORY")
})

/** The database file cannot be opened or migrated (not a database, a folder, no permission): a defect, as before. */
export class DatabaseUnusable extends Data.TaggedError("DatabaseUnusable")<{
  readonly file: string
  readonly reason: string
}> {
  override get message() {
    return `svc: cannot open the database ${this.file} (${this.reason})`
  }
}

/** A migrated database in `filename` (`:memory:` for tests). */
export const layerFile = (filename: string) =>
  Layer.effectDiscard(Effect.zipRight(pragmas, migrate)).pipe(
    Layer.provideMerge(
      Layer.unwrapEffect(Effect.sync(() => {
        if (filename !== ":memory:") {
          makeFolders(NodePath.dirname(filename), 0o700)
          privateDatabaseFile(filename)
        }
        return Sqlite.layer(filename)
      }))
    ),
    Layer.orDie,
    Layer.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause) ? Layer.failCause(cause) : Layer.die(
        new DatabaseUnusable({ file: filename, reason: firstLine(Cause.squash(cause)) })
      )
    )
  )

/** A migrated PostgreSQL database (`SVC_DATABASE_URL=postgres://...`). */
export const layerPostgres = (url: string) =>
  Layer.effectDiscard(migrateOnce).pipe(
    Layer.provideMerge(PostgresDatabase.layer(url)),
    Layer.orDie,
    Layer.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause) ? Layer.failCause(cause) : Layer.die(
        new DatabaseUnusable({ file: redactedUrl(url), reason: firstLine(Cause.squash(cause)) })
      )
    )
  )

/** The URL without its password, for messages. */
const redactedUrl = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@")

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split("\n")[0]!

/** The database named by the configuration. */
export const layer = Layer.unwrapEffect(
  Effect.map(
    AppConfig,
    (config) => config.postgresUrl ? layerPostgres(config.postgresUrl) : layerFile(config.databaseFile)
  )
)
