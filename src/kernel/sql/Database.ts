/**
 * The one SqlClient of the process: SQLite through better-sqlite3 (WAL, foreign keys, a busy timeout
 * so that `svc admin bootstrap` can write while the server runs, and commits flushed to disk before
 * anyone is answered: src/kernel/sql/Durability.ts), with the
 * migrations of `schema/migrations` applied before anything else uses it. The same connection is
 * also `Prepared`, the direct path for hot statements (src/kernel/sql/Sqlite.ts).
 */
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { Effect, Layer } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { AppConfig } from "../config/AppConfig.js"
import { privateDatabaseFile } from "./FileModes.js"
import { applyMissing, loader } from "./Migrations.js"
import * as Sqlite from "./Sqlite.js"

const migrate = Effect.zipRight(applyMissing(), Migrator.make({})({ loader }))

const pragmas = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe("PRAGMA foreign_keys = ON")
  yield* sql.unsafe("PRAGMA busy_timeout = 5000")
  // Savepoint and statement journals in memory rather than temporary files: every group commit
  // job and every nested transaction writes one.
  yield* sql.unsafe("PRAGMA temp_store = MEMORY")
})

/** A migrated database in `filename` (`:memory:` for tests). */
export const layerFile = (filename: string) =>
  Layer.effectDiscard(Effect.zipRight(pragmas, migrate)).pipe(
    Layer.provideMerge(
      Layer.unwrapEffect(Effect.sync(() => {
        if (filename !== ":memory:") {
          NodeFs.mkdirSync(NodePath.dirname(filename), { recursive: true, mode: 0o700 })
          privateDatabaseFile(filename)
        }
        return Sqlite.layer(filename)
      }))
    ),
    Layer.orDie
  )

/** The database named by the configuration. */
export const layer = Layer.unwrapEffect(Effect.map(AppConfig, (config) => layerFile(config.databaseFile)))
