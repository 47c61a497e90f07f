/**
 * The snapshot store: content-addressed chunks and one manifest per snapshot, under
 * `<data dir>/snapshots` (docs/snapshots.md):
 *
 *     chunks/warm/<aa>/<key>        a chunk's bytes as they are
 *     chunks/cold/<aa>/<key>        a chunk's bytes, gzip-compressed (same key)
 *     manifests/<snapshot id>.json  written last, durably: a snapshot exists once this file does
 *     tmp/                          temporary files, emptied at start and by every collection
 *
 * Files are cut into fixed-size chunks (1 MiB), each file on its own, so a change inside a file
 * stores only the chunks it touched and identical files or regions are stored once. A file whose
 * size, modification time, inode and change time are those recorded in the parent manifest is not
 * read at all: its chunks are reused. Chunks are never modified, only added (temporary file, then
 * rename) and removed by garbage collection, which keeps exactly the chunks some manifest names.
 * One svc process owns a store (the lock is in memory).
 *
 * Chunks are shared within one organization only (extensions.md §5, Isolation): a chunk's key is
 * SHA-256 of the organization's id and the chunk's content hash, so whether a push stores a chunk
 * (its `uploaded_bytes`) says nothing about what another organization stored. Manifests name
 * content hashes and their `chunk_scope`; one written before scoping has none, and its chunks keep
 * the content hash as their key (they stay readable, and no scoped push ever finds them).
 */
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import { promisify } from "node:util"
import * as NodeZlib from "node:zlib"
import { syncFileSystem, writeDurable } from "./Fsync.js"
import { SharedLock } from "./Lock.js"
import { type Manifest, type ManifestEntry, type Summary, summaryOf, type Tier } from "./Manifest.js"
import { removeTree, walk, writeTree } from "./Tree.js"

const gzip = promisify(NodeZlib.gzip)
const gunzip = promisify(NodeZlib.gunzip)

export const defaultChunkSize = 1024 * 1024
/** Files read or written at once: enough to keep the disk busy with small files. */
const parallelFiles = 12

export type Progress = (doneBytes: number, totalBytes: number) => void

export class NoManifest extends Error {
  constructor(readonly snapshotId: string) {
    super(`snapshot ${snapshotId} has no manifest in the store`)
  }
}

export class CorruptChunk extends Error {
  constructor(readonly hash: string) {
    super(`chunk ${hash} does not hold the bytes it is named after`)
  }
}

const sha256 = (data: Uint8Array) => NodeCrypto.createHash("sha256").update(data).digest("hex")

/**
 * The file name of a chunk: SHA-256 of its organization's id and its content hash; the content
 * hash itself for a manifest written before chunks were scoped.
 */
export const chunkKey = (scope: string | undefined, hash: string) =>
  scope === undefined ? hash : sha256(Buffer.from(`${scope}\n${hash}`))

/** The keys of every chunk a manifest names. */
export const chunkKeysOf = (manifest: Manifest): ReadonlySet<string> =>
  new Set(manifest.entries.flatMap((entry) => (entry.chunks ?? []).map((hash) => chunkKey(manifest.chunk_scope, hash))))

const exists = (path: string) => NodeFs.access(path).then(() => true, () => false)

export interface PushRequest {
  readonly snapshotId: string
  readonly machineId: string
  /** Whose chunks these are (the machine's organization): chunks are shared within it only. */
  readonly scope: string
  /** The machine's disk folder (the machine must not be writing to it). */
  readonly disk: string
  readonly tier: Tier
  /** The snapshot to take this one against (its unchanged files are not read again). */
  readonly parentId?: string | undefined
  readonly onProgress?: Progress | undefined
  readonly now: number
}

export class ChunkStore {
  readonly chunks: string
  readonly manifests: string
  readonly tmp: string
  private readonly lock = new SharedLock()
  private sequence = 0

  constructor(readonly root: string, readonly chunkSize = defaultChunkSize) {
    this.chunks = NodePath.join(root, "chunks")
    this.manifests = NodePath.join(root, "manifests")
    this.tmp = NodePath.join(root, "tmp")
  }

  /** Creates the folders and empties `tmp` (what a crash left there is garbage). */
  async open() {
    await NodeFs.rm(this.tmp, { recursive: true, force: true })
    for (const folder of [this.manifests, this.tmp]) await NodeFs.mkdir(folder, { recursive: true })
    // Every prefix folder made once, so writing a chunk is a write and a rename.
    for (const tier of ["warm", "cold"] as const) {
      for (let prefix = 0; prefix < 256; prefix++) {
        await NodeFs.mkdir(NodePath.join(this.chunks, tier, prefix.toString(16).padStart(2, "0")), { recursive: true })
      }
    }
    return this
  }

  manifestPath(snapshotId: string) {
    if (!/^[0-9a-zA-Z-]+$/.test(snapshotId)) throw new Error(`invalid snapshot id ${snapshotId}`)
    return NodePath.join(this.manifests, `${snapshotId}.json`)
  }

  chunkPath(tier: Tier, key: string) {
    return NodePath.join(this.chunks, tier, key.slice(0, 2), key)
  }

  /** A new file name under `tmp`, emptied at start and by every collection. */
  temporary() {
    return NodePath.join(this.tmp, `${process.pid}-${Date.now()}-${this.sequence++}`)
  }

  /** The manifest of a snapshot and its text's digest, or undefined when it has none (yet). */
  async read(snapshotId: string): Promise<{ manifest: Manifest; summary: Summary } | undefined> {
    let text: string
    try {
      text = await NodeFs.readFile(this.manifestPath(snapshotId), "utf8")
    } catch (error: any) {
      if (error?.code === "ENOENT") return undefined
      throw error
    }
    const manifest = JSON.parse(text) as Manifest
    return { manifest, summary: summaryOf(manifest, text) }
  }

  /**
   * Stores the disk as snapshot `snapshotId`. Safe to repeat: a snapshot whose manifest exists is
   * answered as it is. The manifest is written only once every chunk it names is durable.
   */
  push(request: PushRequest): Promise<Summary> {
    return this.lock.shared(async () => {
      const done = await this.read(request.snapshotId)
      if (done !== undefined) return done.summary
      const diskSynced = await syncFileSystem(request.disk)
      const parent = request.parentId === undefined ? undefined : await this.read(request.parentId)
      const reusable = new Map<string, ManifestEntry>()
      if (
        parent !== undefined && parent.manifest.tier === request.tier &&
        parent.manifest.chunk_scope === request.scope
      ) {
        for (const entry of parent.manifest.entries) if (entry.type === "file") reusable.set(entry.path, entry)
      }
      const written = new Set<string>()
      let uploaded = 0
      let doneBytes = 0
      // The disk's size is known only once it is walked: meanwhile progress counts against the
      // parent's size, or what the walk has reached.
      let reachedBytes = 0
      const expected = () => Math.max(parent?.manifest.size_bytes ?? 0, reachedBytes)
      const store = async (data: Uint8Array) => {
        const hash = sha256(data)
        if (written.has(hash)) return hash
        written.add(hash)
        const path = this.chunkPath(request.tier, chunkKey(request.scope, hash))
        if (await exists(path)) return hash
        const bytes = request.tier === "cold" ? await gzip(data) : data
        const temporary = this.temporary()
        await NodeFs.writeFile(temporary, bytes)
        await NodeFs.rename(temporary, path)
        uploaded += bytes.byteLength
        return hash
      }
      // Files are read through the walk, by descriptor, never by a path the machine could redirect.
      const entries: Array<ManifestEntry> = await walk<ManifestEntry>(request.disk, {
        parallel: parallelFiles,
        file: async (entry, open) => {
          reachedBytes += entry.size
          const before = reusable.get(entry.path)
          let done: ManifestEntry | undefined
          if (
            before !== undefined && before.chunks !== undefined && before.size === entry.size &&
            before.mtime === entry.mtime && before.identity?.ino === entry.identity.ino &&
            before.identity?.ctime === entry.identity.ctime
          ) {
            done = { ...entry, chunks: before.chunks }
          } else {
            const handle = await open()
            if (handle !== undefined) done = { ...entry, ...(await this.chunkFile(handle, entry.size, store)) }
          }
          doneBytes += entry.size
          request.onProgress?.(doneBytes, expected())
          return done
        }
      })
      const total = entries.reduce((sum, entry) => sum + entry.size, 0)
      // Every chunk durable before the manifest that names them.
      if (!(await syncFileSystem(this.root))) throw new Error("could not sync the snapshot store's file system")
      const manifest: Manifest = {
        format: 1,
        snapshot_id: request.snapshotId,
        machine_id: request.machineId,
        chunk_scope: request.scope,
        tier: request.tier,
        chunk_size: this.chunkSize,
        generation: parent === undefined ? 1 : parent.manifest.generation + 1,
        parent_snapshot_id: parent === undefined ? null : request.parentId ?? null,
        parent: parent?.summary.manifest ?? null,
        created_at: request.now,
        disk_synced: diskSynced,
        size_bytes: total,
        uploaded_bytes: uploaded,
        entries
      }
      const text = JSON.stringify(manifest)
      await writeDurable(this.tmp, this.manifestPath(request.snapshotId), text)
      return summaryOf(manifest, text)
    })
  }

  /** The chunks of at most `size` bytes of the open file (it closes it), and the bytes they hold. */
  private async chunkFile(handle: NodeFs.FileHandle, size: number, store: (data: Uint8Array) => Promise<string>) {
    try {
      const chunks: Array<string> = []
      const buffer = Buffer.allocUnsafe(Math.min(this.chunkSize, Math.max(size, 1)))
      let read = 0
      while (read < size) {
        let filled = 0
        const want = Math.min(buffer.length, size - read)
        while (filled < want) {
          const { bytesRead } = await handle.read(buffer, filled, want - filled, null)
          if (bytesRead === 0) break
          filled += bytesRead
        }
        if (filled === 0) break
        chunks.push(await store(buffer.subarray(0, filled)))
        read += filled
        if (filled < want) break
      }
      return { chunks, size: read }
    } finally {
      await handle.close()
    }
  }

  /** A chunk's bytes, checked against its content hash. */
  private async readChunk(tier: Tier, scope: string | undefined, hash: string) {
    const stored = await NodeFs.readFile(this.chunkPath(tier, chunkKey(scope, hash)))
    const data = tier === "cold" ? await gunzip(stored) : stored
    if (sha256(data) !== hash) throw new CorruptChunk(hash)
    return data
  }

  /**
   * Writes snapshot `snapshotId`'s files into `target`, which must not exist: they go to a
   * temporary folder beside it, made durable, then renamed, so `target` appears whole or not at all.
   */
  restore(snapshotId: string, target: string, onProgress?: Progress): Promise<void> {
    return this.lock.shared(async () => {
      const found = await this.read(snapshotId)
      if (found === undefined) throw new NoManifest(snapshotId)
      const { manifest } = found
      const partial = `${target}.partial`
      await removeTree(partial)
      await NodeFs.mkdir(NodePath.dirname(target), { recursive: true })
      let doneBytes = 0
      // Every entry is created new under folders the restore made: a manifest cannot write elsewhere.
      await writeTree(partial, manifest.entries, async (entry, handle) => {
        for (const hash of entry.chunks ?? []) {
          await handle.write(await this.readChunk(manifest.tier, manifest.chunk_scope, hash))
        }
        doneBytes += entry.size
        onProgress?.(doneBytes, manifest.size_bytes)
      }, parallelFiles)
      if (!(await syncFileSystem(partial))) throw new Error("could not sync the restored disk")
      await NodeFs.rename(partial, target)
    })
  }

  /** Runs `work` as a push does: no collection removes chunks meanwhile (a copy from another host). */
  holding<A>(work: () => Promise<A>): Promise<A> {
    return this.lock.shared(work)
  }

  /** Removes a snapshot's manifest; its chunks go at the next collection. */
  async remove(snapshotId: string) {
    await NodeFs.rm(this.manifestPath(snapshotId), { force: true })
  }

  /**
   * Garbage collection: removes the manifests of snapshots that `live` (read under the lock, so no
   * push runs meanwhile) does not name, then every chunk no remaining manifest names, and `tmp`.
   */
  collect(live: () => Promise<ReadonlySet<string>>) {
    return this.lock.exclusive(async () => {
      const keep = await live()
      const referenced = { warm: new Set<string>(), cold: new Set<string>() }
      let manifests = 0
      for (const file of await NodeFs.readdir(this.manifests)) {
        const id = file.replace(/\.json$/, "")
        if (!keep.has(id)) {
          await NodeFs.rm(NodePath.join(this.manifests, file), { force: true })
          manifests++
          continue
        }
        const manifest = JSON.parse(await NodeFs.readFile(NodePath.join(this.manifests, file), "utf8")) as Manifest
        for (const key of chunkKeysOf(manifest)) referenced[manifest.tier].add(key)
      }
      let chunks = 0
      let bytes = 0
      for (const tier of ["warm", "cold"] as const) {
        const folder = NodePath.join(this.chunks, tier)
        for (const prefix of await NodeFs.readdir(folder)) {
          for (const hash of await NodeFs.readdir(NodePath.join(folder, prefix))) {
            if (referenced[tier].has(hash)) continue
            const path = NodePath.join(folder, prefix, hash)
            bytes += (await NodeFs.stat(path)).size
            await NodeFs.rm(path, { force: true })
            chunks++
          }
        }
      }
      await NodeFs.rm(this.tmp, { recursive: true, force: true })
      await NodeFs.mkdir(this.tmp, { recursive: true })
      return { manifests, chunks, bytes }
    })
  }

  /** Bytes of every chunk and manifest file. */
  async sizeOnDisk() {
    let total = 0
    const add = async (folder: string) => {
      for (const entry of await NodeFs.readdir(folder, { withFileTypes: true })) {
        const path = NodePath.join(folder, entry.name)
        if (entry.isDirectory()) await add(path)
        else total += (await NodeFs.stat(path)).size
      }
    }
    await add(this.chunks)
    await add(this.manifests)
    return total
  }
}
