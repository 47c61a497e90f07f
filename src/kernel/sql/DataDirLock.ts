/**
 * One data dir serves one svc process (extensions.md §4). The runtime holds an exclusive SQLite lock
 * on `<data dir>/svc.lock` for the process's life: the lock is the kernel's (fcntl), so it goes
 * when the process dies, kill -9 included, and never goes stale. The holder writes its pid in
 * `svc.pid` beside it, so a second process can name it.
 */
import Sqlite from "better-sqlite3"
import { Data, Effect, Layer } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { AppConfig } from "../config/AppConfig.js"
import { privateDatabaseFile, privateDataDir } from "./FileModes.js"

export class DataDirInUse extends Data.TaggedError("DataDirInUse")<{
  readonly dataDir: string
  readonly holder: string
}> {
  override get message() {
    return `svc: the data dir ${this.dataDir} is in use by another svc process (pid ${this.holder}); ` +
      `stop it first or start this one with another --data-dir`
  }
}

/** The data dir cannot be made or opened (a path where no folder can be, a file, no permission). */
export class DataDirUnusable extends Data.TaggedError("DataDirUnusable")<{
  readonly dataDir: string
  readonly reason: string
}> {
  override get message() {
    return `svc: cannot use the data dir ${this.dataDir} (${this.reason}); ` +
      `choose another with --data-dir or SVC_DATA_DIR`
  }
}

const holderOf = (pidFile: string) => {
  try {
    return NodeFs.readFileSync(pidFile, "utf8").trim() || "unknown"
  } catch {
    return "unknown"
  }
}

const open = (dataDir: string) =>
  Effect.try({
    try: () => {
      privateDataDir(dataDir)
      privateDatabaseFile(NodePath.join(dataDir, "svc.lock"))
      return new Sqlite(NodePath.join(dataDir, "svc.lock"))
    },
    catch: (error) => new DataDirUnusable({ dataDir, reason: (error as Error).message })
  })

interface Held {
  readonly lock: Sqlite.Database
  readonly pidFile: string
}

const acquire = (dataDir: string) =>
  Effect.flatMap(open(dataDir), (lock): Effect.Effect<Held, DataDirInUse | DataDirUnusable> => {
    const pidFile = NodePath.join(dataDir, "svc.pid")
    try {
      lock.pragma("locking_mode = EXCLUSIVE")
      lock.exec("BEGIN EXCLUSIVE")
    } catch (error) {
      lock.close()
      if ((error as { code?: string }).code !== "SQLITE_BUSY") {
        return Effect.fail(new DataDirUnusable({ dataDir, reason: (error as Error).message }))
      }
      return Effect.fail(new DataDirInUse({ dataDir, holder: holderOf(pidFile) }))
    }
    NodeFs.writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o600 })
    return Effect.succeed({ lock, pidFile })
  })

const release = ({ lock, pidFile }: Held) =>
  Effect.sync(() => {
    NodeFs.rmSync(pidFile, { force: true })
    lock.exec("ROLLBACK")
    lock.close()
  })

/**
 * Held while the layer's scope is open; fails with DataDirInUse when another process holds it, with
 * DataDirUnusable when the folder cannot be made or its lock file opened.
 */
export const layer = Layer.scopedDiscard(
  Effect.flatMap(AppConfig, (config) => Effect.acquireRelease(acquire(config.dataDir), release))
)
