/**
 * Snapshots across hosts (docs/scale-out.md "Restores and templates on any host"): a restore or a
 * create from a template may run on a host whose store lacks the snapshot. Its manifest and the
 * chunks it misses are copied from the store of the host that holds them, over two internal routes
 * of that host's node (src/snapshots/ChunkRoutes.ts):
 *
 *     GET /internal/snapshots/<snapshot id>/manifest   the manifest's text
 *     GET /internal/chunks/<tier>/<key>                a chunk's stored bytes (gzip in `cold`)
 *
 * Nothing received is trusted: the manifest must have the digest the snapshot's row names, and
 * each chunk the content hash its manifest names, or the copy fails (`CorruptChunk`). Content
 * addressed, so only what the local store misses moves; each chunk is written whole (temporary
 * file, rename), every one durable before the manifest that names them.
 */
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs/promises"
import { promisify } from "node:util"
import * as NodeZlib from "node:zlib"
import { chunkKey, type ChunkStore, CorruptChunk } from "./ChunkStore.js"
import { syncFileSystem, writeDurable } from "./Fsync.js"
import { digestOf, type Manifest, type Tier } from "./Manifest.js"
import { inPool } from "./Tree.js"

const gunzip = promisify(NodeZlib.gunzip)

const sha256 = (data: Uint8Array) => NodeCrypto.createHash("sha256").update(data).digest("hex")

/** A chunk key and a snapshot id as they may appear in an internal path: nothing else is looked up. */
export const keyPattern = /^[0-9a-f]{64}$/
export const snapshotIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export const manifestPathOf = (snapshotId: string) => `/internal/snapshots/${snapshotId}/manifest`
export const chunkPathOf = (tier: Tier, key: string) => `/internal/chunks/${tier}/${key}`

/** Fetches one internal path from the holder: its bytes, or undefined when it answers 404. */
export type FetchFromHolder = (path: string) => Promise<Uint8Array | undefined>

/** The holder does not have the snapshot (its manifest is gone: deleted meanwhile). */
export class NotOnHolder extends Error {
  constructor(readonly path: string) {
    super(`the holder has no ${path}`)
  }
}

/** At once, per copy: enough to keep a link busy with 1 MiB chunks. */
const parallelChunks = 8

export interface CopyResult {
  /** Chunks fetched (the store had none of them) and their bytes as stored. */
  readonly chunks: number
  readonly bytes: number
}

/**
 * Makes snapshot `snapshotId` restorable from `store`: nothing when its manifest is there, else
 * its manifest (digest `manifestDigest`) and the chunks the store misses, from `fetch`.
 */
export const copyMissing = (
  store: ChunkStore,
  snapshotId: string,
  manifestDigest: string,
  fetch: FetchFromHolder
): Promise<CopyResult> =>
  store.holding(async () => {
    if ((await store.read(snapshotId)) !== undefined) return { chunks: 0, bytes: 0 }
    const manifestPath = manifestPathOf(snapshotId)
    const text = await fetch(manifestPath)
    if (text === undefined) throw new NotOnHolder(manifestPath)
    const manifestText = Buffer.from(text).toString("utf8")
    if (digestOf(manifestText) !== manifestDigest) throw new CorruptChunk(`manifest of ${snapshotId}`)
    const manifest = JSON.parse(manifestText) as Manifest
    if (manifest.snapshot_id !== snapshotId || (manifest.tier !== "warm" && manifest.tier !== "cold")) {
      throw new CorruptChunk(`manifest of ${snapshotId}`)
    }
    // Each key once, with the content hash its bytes must have.
    const wanted = new Map<string, string>()
    for (const entry of manifest.entries) {
      for (const hash of entry.chunks ?? []) wanted.set(chunkKey(manifest.chunk_scope, hash), hash)
    }
    let chunks = 0
    let bytes = 0
    await inPool([...wanted], parallelChunks, async ([key, hash]) => {
      const path = store.chunkPath(manifest.tier, key)
      if (await NodeFs.access(path).then(() => true, () => false)) return
      const stored = await fetch(chunkPathOf(manifest.tier, key))
      if (stored === undefined) throw new NotOnHolder(chunkPathOf(manifest.tier, key))
      const data = manifest.tier === "cold" ? await gunzip(stored).catch(() => undefined) : stored
      if (data === undefined || sha256(data) !== hash) throw new CorruptChunk(hash)
      const temporary = store.temporary()
      await NodeFs.writeFile(temporary, stored)
      await NodeFs.rename(temporary, path)
      chunks++
      bytes += stored.byteLength
    })
    // Every chunk durable before the manifest that names them, as in a push.
    if (!(await syncFileSystem(store.root))) throw new Error("could not sync the snapshot store's file system")
    await writeDurable(store.tmp, store.manifestPath(snapshotId), manifestText)
    return { chunks, bytes }
  })

/**
 * What the holder serves: the bytes at an internal path in its store, or undefined for anything
 * that is not a well-formed name of something it holds (never a file outside the store).
 */
export const servedBytes = async (store: ChunkStore, path: string): Promise<Uint8Array | undefined> => {
  const manifest = /^\/internal\/snapshots\/([^/]+)\/manifest$/.exec(path)
  const chunk = /^\/internal\/chunks\/(warm|cold)\/([^/]+)$/.exec(path)
  const file = manifest !== null && snapshotIdPattern.test(manifest[1]!)
    ? store.manifestPath(manifest[1]!)
    : chunk !== null && keyPattern.test(chunk[2]!)
    ? store.chunkPath(chunk[1] as Tier, chunk[2]!)
    : undefined
  if (file === undefined) return undefined
  return NodeFs.readFile(file).catch((error) => {
    if (error?.code === "ENOENT") return undefined
    throw error
  })
}
