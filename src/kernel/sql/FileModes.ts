/**
 * The data dir holds the database, the secret keys and every machine's disk: only svc's user may
 * read it (extensions.md §5, Isolation). The folder is 0700 and the database (with its `-wal` and
 * `-shm`), the keys and the lock files 0600; an install made before this is fixed at start.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { makeFolders } from "../Folders.js"

/** Files of the data dir that hold secrets or the database, by name. */
export const privateFileNames = ["svc.db", "svc.db-wal", "svc.db-shm", "secret.key", "svc.lock", "svc.pid"]

/** Makes `path` mode `mode` if it exists (and is not a link: svc does not follow one there). */
const tighten = (path: string, mode: number) => {
  const stat = NodeFs.lstatSync(path, { throwIfNoEntry: false })
  if (stat === undefined || stat.isSymbolicLink()) return
  if ((stat.mode & 0o777) !== mode) NodeFs.chmodSync(path, mode)
}

/** Creates the data dir 0700 (or makes it so) and its existing private files 0600. */
export const privateDataDir = (dataDir: string) => {
  makeFolders(dataDir, 0o700)
  tighten(dataDir, 0o700)
  for (const name of privateFileNames) tighten(NodePath.join(dataDir, name), 0o600)
}

/**
 * A database file made 0600 before SQLite opens it (SQLite gives its `-wal` and `-shm` the mode of
 * the database file), and the three fixed if they exist already.
 */
export const privateDatabaseFile = (filename: string) => {
  NodeFs.closeSync(NodeFs.openSync(filename, "a", 0o600))
  for (const suffix of ["", "-wal", "-shm"]) tighten(`${filename}${suffix}`, 0o600)
}
