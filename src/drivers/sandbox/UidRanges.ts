/**
 * Each machine's own range of 65,536 host uids and gids (docs/drivers.md "Isolation"): range `n`
 * is host ids 2^31 + 65,536·n onwards, above every id a host gives its users, and is the machine's
 * root (n's first id) and its other users. A range is taken by creating `<data dir>/uid-ranges/<n>`
 * exclusively (O_EXCL: two svc processes on one data dir never take the same), holding the
 * machine's id, and stays the machine's across restarts until it is destroyed.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"

export const rangeSize = 65_536
const firstBase = 2 ** 31
/** uid 2^32 - 1 is "no id": the last whole range below it, kept for the start-up probe. */
const lastRange = Math.floor((2 ** 32 - 1 - firstBase) / rangeSize) - 1

const folder = (dataDir: string) => NodePath.join(dataDir, "uid-ranges")

export const baseOf = (range: number) => firstBase + range * rangeSize

/** The range IsolationCheck's probe maps (a user namespace that runs nothing and lives a moment). */
export const probeBase = baseOf(lastRange)

const read = (file: string) => {
  try {
    return NodeFs.readFileSync(file, "utf8").trim()
  } catch {
    return undefined
  }
}

/** The range taken by machine `id`, if any (one readdir: a few thousand names at most). */
const findRange = (dataDir: string, id: string) => {
  let names: Array<string>
  try {
    names = NodeFs.readdirSync(folder(dataDir))
  } catch {
    return { found: undefined, taken: new Set<number>() }
  }
  const taken = new Set<number>()
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue
    const range = Number(name)
    taken.add(range)
    if (read(NodePath.join(folder(dataDir), name)) === id) return { found: range, taken }
  }
  return { found: undefined, taken }
}

/** The first host uid of machine `id`'s range, taken now when it has none; throws when none is left. */
export const uidBaseOf = (dataDir: string, id: string): number => {
  const { found, taken } = findRange(dataDir, id)
  if (found !== undefined) return baseOf(found)
  NodeFs.mkdirSync(folder(dataDir), { recursive: true, mode: 0o700 })
  for (let range = 0; range < lastRange; range++) {
    if (taken.has(range)) continue
    const file = NodePath.join(folder(dataDir), String(range))
    let fd: number
    try {
      fd = NodeFs.openSync(file, "wx", 0o600)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") continue
      throw error
    }
    try {
      NodeFs.writeSync(fd, `${id}\n`)
      NodeFs.fsyncSync(fd)
    } finally {
      NodeFs.closeSync(fd)
    }
    return baseOf(range)
  }
  throw new Error("no uid range is left for another machine")
}

/** Gives machine `id`'s range back (at destroy, once its disk is gone). */
export const release = (dataDir: string, id: string) => {
  const { found } = findRange(dataDir, id)
  if (found !== undefined) NodeFs.rmSync(NodePath.join(folder(dataDir), String(found)), { force: true })
}
