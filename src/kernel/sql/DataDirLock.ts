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

const holderOf = (pidFile: string) => {
  try {
    return NodeFs.readFileSync(pidFile, "utf8").trim() || "unknown"
  } catch {
    return "unknown"
  }
}

const acquire = (dataDir: string) =>
  Effect.suspend(() => {
    privateDataDir(dataDir)
    const pidFile = NodePath.join(dataDir, "svc.pid")
    privateDatabaseFile(NodePath.join(dataDir, "svc.lock"))
    const lock = new Sqlite(NodePath.join(dataDir, "svc.lock"))
    try {
      lock.pragma("locking_mode = EXCLUSIVE")
      lock.exec("BEGIN EXCLUSIVE")
    } catch (error) {
      lock.close()
      if ((error as { code?: string }).code !== "SQLITE_BUSY") return Effect.die(error)
      return Effect.fail(new DataDirInUse({ dataDir, holder: holderOf(pidFile) }))
    }
    NodeFs.writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o600 })
    return Effect.succeed({ lock, pidFile })
  })

const release = ({ lock, pidFile }: { readonly lock: Sqlite.Database; readonly pidFile: string }) =>
  Effect.sync(() => {
    NodeFs.rmSync(pidFile, { force: true })
    lock.exec("ROLLBACK")
    lock.close()
  })

/** Held while the layer's scope is open; fails with DataDirInUse when another process holds it. */
export const layer = Layer.scopedDiscard(
  Effect.flatMap(AppConfig, (config) => Effect.acquireRelease(acquire(config.dataDir), release))
)
