/**
 * `svc admin backup DIR` and `svc admin restore DIR`: the database (a consistent copy, taken while
 * svc runs or not) and the snapshot store's manifests and chunks. Machines' disks are not included:
 * snapshot a machine to keep its disk (docs/install.md, "Backups").
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Layer } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as AppConfig from "../kernel/config/AppConfig.js"
import { makeFolders } from "../kernel/Folders.js"
import { backupDatabase } from "../kernel/sql/Backup.js"
import * as DataDirLock from "../kernel/sql/DataDirLock.js"
import { copyStore, readySnapshotIds } from "../snapshots/store/Backup.js"
import { withDataDir } from "./DataDirOption.js"

/** A refusal is one line on stderr and exit code 1. */
const failWithOneLine = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchAll(effect, (error) =>
    Effect.sync(() => {
      const message = typeof error === "string" ? error : error instanceof Error ? error.message : String(error)
      // Some refusals (DataDirInUse) already speak as svc: one prefix, not `svc: svc: ...`.
      const text = message.startsWith("svc: ") ? message : `svc: ${message}`
      process.stderr.write(`${text}\n`)
      process.exit(1)
    }))

/** The database of SVC_DATABASE_URL=postgres://... is PostgreSQL's to back up (docs/scale-out.md). */
const onPostgres =
  "svc: the database is PostgreSQL (SVC_DATABASE_URL): back it up with pg_dump, and each host's data dir"

const dataDir = Options.text("data-dir").pipe(
  Options.optional,
  Options.withDescription("The data directory (default SVC_DATA_DIR)")
)
const folder = Args.directory({ name: "DIR", exists: "either" }).pipe(Args.withDescription("The backup's folder"))

const backup = Command.make("backup", { dataDir, folder }, ({ dataDir, folder }) =>
  Effect.gen(function*() {
    const config = yield* AppConfig.AppConfig
    if (config.postgresUrl !== undefined) return yield* Effect.fail(onPostgres)
    const target = NodePath.resolve(folder)
    makeFolders(target)
    const copy = NodePath.join(target, "svc.db")
    const database = yield* Effect.tryPromise({
      try: () => backupDatabase(config.databaseFile, copy),
      catch: (error) => `svc: ${(error as Error).message}`
    })
    const store = yield* Effect.promise(() =>
      copyStore(NodePath.join(config.dataDir, "snapshots"), NodePath.join(target, "snapshots"), readySnapshotIds(copy))
    )
    const summary = {
      taken_at: new Date().toISOString(),
      schema_version: database.schemaVersion,
      snapshots: store.snapshots,
      chunks_copied: store.chunksCopied,
      chunks_already_there: store.chunksKept,
      snapshots_missing: store.missing
    }
    NodeFs.writeFileSync(NodePath.join(target, "backup.json"), JSON.stringify(summary, null, 2) + "\n")
    yield* Console.log(JSON.stringify(summary))
  }).pipe(failWithOneLine, Effect.provide(AppConfig.layer), withDataDir(dataDir))).pipe(
    Command.withDescription("Copy the database (consistently, also while svc runs) and the snapshot store into DIR")
  )

const restore = Command.make(
  "restore",
  {
    dataDir,
    folder,
    force: Options.boolean("force").pipe(Options.withDescription("Replace the database the data directory has"))
  },
  ({ dataDir, folder, force }) =>
    Effect.gen(function*() {
      const config = yield* AppConfig.AppConfig
      if (config.postgresUrl !== undefined) return yield* Effect.fail(onPostgres)
      const source = NodePath.resolve(folder)
      const database = NodePath.join(source, "svc.db")
      if (!NodeFs.existsSync(database)) return yield* Effect.fail(`svc: ${source} holds no backup (no svc.db)`)
      if (NodeFs.existsSync(config.databaseFile) && !force) {
        return yield* Effect.fail(`svc: ${config.dataDir} already has a database; --force replaces it`)
      }
      // Held while restoring: no svc may start on the data dir meanwhile (nor run now).
      yield* Layer.build(DataDirLock.layer)
      for (const suffix of ["", "-wal", "-shm"]) NodeFs.rmSync(config.databaseFile + suffix, { force: true })
      NodeFs.copyFileSync(database, config.databaseFile)
      const manifests = NodePath.join(source, "snapshots", "manifests")
      const ids = NodeFs.existsSync(manifests)
        ? NodeFs.readdirSync(manifests).filter((name) => name.endsWith(".json")).map((name) => name.slice(0, -5))
        : []
      const store = yield* Effect.promise(() =>
        copyStore(NodePath.join(source, "snapshots"), NodePath.join(config.dataDir, "snapshots"), ids)
      )
      yield* Console.log(JSON.stringify({ restored: config.dataDir, snapshots: store.snapshots }))
    }).pipe(Effect.scoped, failWithOneLine, Effect.provide(AppConfig.layer), withDataDir(dataDir))
).pipe(Command.withDescription("Put a backup made by `svc admin backup` into the data dir (svc must not be running)"))

export const backupCommands = [backup, restore] as const
