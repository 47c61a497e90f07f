/**
 * Copies what a backup needs of a snapshot store: the manifests of the given snapshots and every
 * chunk they name, into the same layout under another root. Chunks are content-addressed and never
 * change, so a chunk already in the target is skipped: backing up again into the same folder copies
 * only what is new. A snapshot whose manifest or chunks are gone (deleted while the backup ran) is
 * reported, not copied.
 */
import Sqlite from "better-sqlite3"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import { chunkKeysOf } from "./ChunkStore.js"
import { syncFileSystem } from "./Fsync.js"
import type { Manifest } from "./Manifest.js"

/** The ready snapshots' ids in a database file outside svc's connection (a backup's copy). */
export const readySnapshotIds = (databaseFile: string) => {
  const db = new Sqlite(databaseFile, { readonly: true, fileMustExist: true })
  try {
    const rows = db.prepare("SELECT id FROM snapshots WHERE status = 'ready' ORDER BY id").all() as Array<
      { id: string }
    >
    return rows.map((row) => row.id)
  } finally {
    db.close()
  }
}

export interface StoreCopy {
  readonly snapshots: number
  readonly chunksCopied: number
  readonly chunksKept: number
  /** Snapshot ids that could not be copied whole. */
  readonly missing: ReadonlyArray<string>
}

const exists = (path: string) => NodeFs.access(path).then(() => true, () => false)

export const copyStore = async (from: string, to: string, snapshotIds: ReadonlyArray<string>): Promise<StoreCopy> => {
  let chunksCopied = 0
  let chunksKept = 0
  const missing: Array<string> = []
  await NodeFs.mkdir(NodePath.join(to, "manifests"), { recursive: true })
  for (const id of snapshotIds) {
    if (!/^[0-9a-zA-Z-]+$/.test(id)) continue
    const manifestFile = NodePath.join("manifests", `${id}.json`)
    const text = await NodeFs.readFile(NodePath.join(from, manifestFile), "utf8").catch(() => undefined)
    if (text === undefined) {
      missing.push(id)
      continue
    }
    const manifest = JSON.parse(text) as Manifest
    let whole = true
    for (const key of chunkKeysOf(manifest)) {
      const relative = NodePath.join("chunks", manifest.tier, key.slice(0, 2), key)
      const target = NodePath.join(to, relative)
      if (await exists(target)) {
        chunksKept++
        continue
      }
      await NodeFs.mkdir(NodePath.dirname(target), { recursive: true })
      // Through a temporary name, so an interrupted backup never leaves a partial chunk under its hash.
      const partial = `${target}.partial`
      const copied = await NodeFs.copyFile(NodePath.join(from, relative), partial).then(() => true, () => false)
      if (!copied) {
        whole = false
        break
      }
      await NodeFs.rename(partial, target)
      chunksCopied++
    }
    if (!whole) {
      missing.push(id)
      continue
    }
    // The manifest last: a snapshot is in the backup once its manifest is.
    await NodeFs.writeFile(NodePath.join(to, manifestFile), text)
  }
  await syncFileSystem(to)
  return { snapshots: snapshotIds.length - missing.length, chunksCopied, chunksKept, missing }
}
