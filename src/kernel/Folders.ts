/**
 * Making a folder and its missing parents. Node's own `mkdir(path, { recursive: true })` (20 and 24)
 * loops forever, one core busy and no signal handled, where a parent exists but the child cannot be
 * made there and says ENOENT (`/proc/nope`, `/sys/x`); this walks up once and fails instead.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"

/** Makes `path` (mode `mode` for the folders it makes) and its missing parents; throws Node's error if it cannot. */
export const makeFolders = (path: string, mode = 0o777): void => {
  try {
    NodeFs.mkdirSync(path, { mode })
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === "EEXIST" && NodeFs.statSync(path).isDirectory()) return
    const parent = NodePath.dirname(path)
    if (code !== "ENOENT" || parent === path) throw error
    makeFolders(parent, mode)
    // Once: a folder that still cannot be made under an existing parent fails with its own error.
    NodeFs.mkdirSync(path, { mode })
  }
}
