/**
 * A consistent copy of the database while svc may be running: SQLite's online backup API through
 * its own read-only connection, so the server's writes go on and the copy is one transaction's view.
 */
import Sqlite from "better-sqlite3"
import * as NodeFs from "node:fs"

/**
 * Copies `databaseFile` to `target` (replaced if present); answers its schema version. Which
 * snapshots it holds is the store's to read (snapshots/store/Backup.ts `readySnapshotIds`).
 */
export const backupDatabase = async (databaseFile: string, target: string) => {
  if (!NodeFs.existsSync(databaseFile)) throw new Error(`no database at ${databaseFile}`)
  NodeFs.rmSync(target, { force: true })
  const source = new Sqlite(databaseFile, { readonly: true, fileMustExist: true })
  try {
    await source.backup(target)
  } finally {
    source.close()
  }
  const copy = new Sqlite(target)
  try {
    // One self-contained file: the copy keeps the source's WAL mode, which would add -wal and -shm files.
    copy.pragma("journal_mode = DELETE")
    const version = copy.prepare("SELECT MAX(migration_id) AS v FROM effect_sql_migrations").get() as { v: number }
    return { schemaVersion: version.v }
  } finally {
    copy.close()
  }
}
