/**
 * The snapshot store on real folders: restores give back exactly what was pushed (bytes, modes,
 * symlinks, times), a second push stores only what changed (uploaded_bytes), garbage collection
 * frees exactly what no manifest names (the store's size on disk), and the cold tier compresses.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { chunkKey, ChunkStore } from "../../src/snapshots/store/ChunkStore.js"
import { walk } from "../../src/snapshots/store/Tree.js"

const dirs: Array<string> = []
const tempDir = () => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-store-"))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) NodeFs.rmSync(dir, { recursive: true, force: true })
})

const MiB = 1024 * 1024

/** A disk with small files, a large one, a symlink, an empty file, odd modes and an old time. */
const makeDisk = () => {
  const disk = NodePath.join(tempDir(), "disk")
  NodeFs.mkdirSync(NodePath.join(disk, "root", "project", "src"), { recursive: true })
  NodeFs.mkdirSync(NodePath.join(disk, "tmp"), { recursive: true })
  for (let i = 0; i < 50; i++) {
    NodeFs.writeFileSync(
      NodePath.join(disk, "root", "project", "src", `file${i}.txt`),
      `small file ${i}\n`.repeat(i + 1)
    )
  }
  NodeFs.writeFileSync(NodePath.join(disk, "root", "big.bin"), NodeCrypto.randomBytes(5 * MiB + 123))
  NodeFs.writeFileSync(NodePath.join(disk, "root", "empty"), "")
  NodeFs.writeFileSync(NodePath.join(disk, "root", "script.sh"), "#!/bin/sh\necho hi\n", { mode: 0o755 })
  NodeFs.chmodSync(NodePath.join(disk, "root", "script.sh"), 0o4755)
  NodeFs.symlinkSync("project/src/file1.txt", NodePath.join(disk, "root", "link"))
  NodeFs.symlinkSync("/nowhere/at/all", NodePath.join(disk, "root", "dangling"))
  NodeFs.chmodSync(NodePath.join(disk, "tmp"), 0o1777)
  NodeFs.utimesSync(NodePath.join(disk, "root", "empty"), 1_000_000, 1_000_000.123456)
  return disk
}

/** What a restore must give back: every entry's path, type, mode, owner, size, target and bytes. */
const picture = async (root: string) =>
  (await walk(root)).map(({ identity: _identity, mtime: _mtime, ...entry }) => ({
    ...entry,
    sha: entry.type === "file"
      ? NodeCrypto.createHash("sha256").update(NodeFs.readFileSync(NodePath.join(root, entry.path))).digest("hex")
      : undefined
  }))

/** Times agree to a microsecond (utimes takes a double of seconds, set to the microsecond). */
const sameTimes = async (restored: string, source: string) => {
  const [a, b] = [await walk(restored), await walk(source)]
  assert.strictEqual(a.length, b.length)
  a.forEach((entry, i) => {
    const drift = BigInt(entry.mtime) - BigInt(b[i]!.mtime)
    assert.isTrue(drift < 2000n && drift > -2000n, `${entry.path}: ${entry.mtime} vs ${b[i]!.mtime}`)
  })
}

const same = async (restored: string, source: string) => {
  assert.deepStrictEqual(await picture(restored), await picture(source))
  await sameTimes(restored, source)
}

const open = () => new ChunkStore(NodePath.join(tempDir(), "snapshots")).open()

/** Restores snapshot `id` into a fresh folder and checks it holds what `disk` held. */
const restoresSame = async (store: ChunkStore, id: string, disk: string) => {
  const target = NodePath.join(tempDir(), "restored")
  await store.restore(id, target)
  await same(target, disk)
  return target
}

describe("snapshot store", () => {
  it("a restore gives back exactly what was pushed; pushing again is answered from the manifest", async () => {
    const store = await open()
    const disk = makeDisk()
    const first = await store.push({ snapshotId: "s1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    assert.strictEqual(first.generation, 1)
    assert.isNull(first.parent_manifest)
    assert.match(first.manifest, /^sha256:[0-9a-f]{64}$/)
    assert.isTrue(first.disk_synced)
    const expectedSize = (await walk(disk)).reduce((sum, e) => sum + e.size, 0)
    assert.strictEqual(first.size_bytes, expectedSize)
    // The 50 small files differ; the big one is 6 chunks; nothing repeats: all of it is new.
    assert.strictEqual(first.uploaded_bytes, expectedSize)

    const again = await store.push({ snapshotId: "s1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 2 })
    assert.deepStrictEqual(again, first)

    const target = await restoresSame(store, "s1", disk)
    assert.isFalse(NodeFs.existsSync(`${target}.partial`))
  })

  it("a second push stores only what changed, and names its parent", async () => {
    const store = await open()
    const disk = makeDisk()
    const first = await store.push({ snapshotId: "s1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    // Change 100 bytes inside the big file (one chunk) and one small file; add a file that repeats another.
    const big = NodeFs.openSync(NodePath.join(disk, "root", "big.bin"), "r+")
    NodeFs.writeSync(big, Buffer.alloc(100, 7), 0, 100, 2 * MiB + 10)
    NodeFs.closeSync(big)
    NodeFs.writeFileSync(NodePath.join(disk, "root", "project", "src", "file3.txt"), "changed\n")
    NodeFs.copyFileSync(NodePath.join(disk, "root", "project", "src", "file9.txt"), NodePath.join(disk, "root", "copy"))
    const sizeBefore = await store.sizeOnDisk()
    const second = await store.push({
      snapshotId: "s2",
      machineId: "m",
      scope: "org-a",
      disk,
      tier: "warm",
      parentId: "s1",
      now: 2
    })
    assert.strictEqual(second.generation, 2)
    assert.strictEqual(second.parent_manifest, first.manifest)
    assert.strictEqual(
      second.uploaded_bytes,
      MiB + "changed\n".length,
      "one chunk of the big file and the changed file"
    )
    assert.strictEqual(second.size_bytes, (await walk(disk)).reduce((sum, e) => sum + e.size, 0))
    const grown = (await store.sizeOnDisk()) - sizeBefore
    assert.isBelow(grown, MiB + 64 * 1024, "the store grew by the new chunk and the manifest")

    await restoresSame(store, "s2", disk)
    const old = NodePath.join(tempDir(), "old")
    await store.restore("s1", old)
    assert.strictEqual(
      NodeFs.readFileSync(NodePath.join(old, "root", "project", "src", "file3.txt"), "utf8"),
      "small file 3\n".repeat(4)
    )
  })

  it("garbage collection frees exactly the chunks no manifest names", async () => {
    const store = await open()
    const disk = makeDisk()
    await store.push({ snapshotId: "s1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    const afterFirst = await store.sizeOnDisk()
    NodeFs.writeFileSync(NodePath.join(disk, "root", "new.bin"), NodeCrypto.randomBytes(3 * MiB))
    await store.push({ snapshotId: "s2", machineId: "m", scope: "org-a", disk, tier: "warm", parentId: "s1", now: 2 })
    const afterSecond = await store.sizeOnDisk()
    assert.isAbove(afterSecond - afterFirst, 3 * MiB)

    // Nothing is unreferenced while both live.
    assert.deepStrictEqual(await store.collect(async () => new Set(["s1", "s2"])), {
      manifests: 0,
      chunks: 0,
      bytes: 0
    })
    // s2 deleted: its manifest and the 3 chunks only it named go.
    await store.remove("s2")
    const collected = await store.collect(async () => new Set(["s1"]))
    assert.deepStrictEqual(collected, { manifests: 0, chunks: 3, bytes: 3 * MiB })
    assert.strictEqual(await store.sizeOnDisk(), afterFirst)
    // A manifest the database no longer knows (a crash between the row and the file) goes too.
    const gone = await store.collect(async () => new Set())
    assert.strictEqual(gone.manifests, 1)
    assert.strictEqual(await store.sizeOnDisk(), 0)
  })

  it("what a crashed push left behind (temporary files, chunks without a manifest) is collected", async () => {
    const store = await open()
    const disk = makeDisk()
    await store.push({ snapshotId: "s1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    const size = await store.sizeOnDisk()
    // A push that died after writing a chunk and a temporary file, before its manifest.
    const orphan = Buffer.from("orphan chunk")
    const hash = NodeCrypto.createHash("sha256").update(orphan).digest("hex")
    NodeFs.mkdirSync(NodePath.dirname(store.chunkPath("warm", hash)), { recursive: true })
    NodeFs.writeFileSync(store.chunkPath("warm", hash), orphan)
    NodeFs.writeFileSync(NodePath.join(store.tmp, "half-written"), "x")
    const reopened = await new ChunkStore(store.root).open()
    assert.deepStrictEqual(NodeFs.readdirSync(reopened.tmp), [])
    assert.deepStrictEqual(await reopened.collect(async () => new Set(["s1"])), {
      manifests: 0,
      chunks: 1,
      bytes: orphan.length
    })
    assert.strictEqual(await reopened.sizeOnDisk(), size)
  })

  it("chunks are shared within one organization only: another's push of the same bytes uploads them all", async () => {
    const store = await open()
    const disk = makeDisk()
    const first = await store.push({ snapshotId: "a1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    const sameOrganization = await store.push({
      snapshotId: "a2",
      machineId: "m2",
      scope: "org-a",
      disk,
      tier: "warm",
      now: 2
    })
    assert.strictEqual(sameOrganization.uploaded_bytes, 0, "the same bytes in one organization are stored once")
    // Organization B guesses org A's content: its upload says nothing about what A stored.
    const other = await store.push({ snapshotId: "b1", machineId: "mb", scope: "org-b", disk, tier: "warm", now: 3 })
    assert.strictEqual(other.uploaded_bytes, first.uploaded_bytes)
    assert.strictEqual(other.size_bytes, first.size_bytes)
    await restoresSame(store, "b1", disk)
    // Removing A's snapshots frees A's chunks and leaves B's whole.
    await store.collect(async () => new Set(["b1"]))
    await restoresSame(store, "b1", disk)
  })

  it("a manifest written before chunks were scoped still restores (its chunks keep their content hash)", async () => {
    const store = await open()
    const disk = makeDisk()
    await store.push({ snapshotId: "s1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    // Rewrites the store as an older svc left it: chunks named by their content hash, no chunk_scope.
    const { manifest } = (await store.read("s1"))!
    for (const hash of new Set(manifest.entries.flatMap((entry) => entry.chunks ?? []))) {
      NodeFs.renameSync(store.chunkPath("warm", chunkKey("org-a", hash)), store.chunkPath("warm", hash))
    }
    const { chunk_scope: _scope, ...legacy } = manifest
    NodeFs.writeFileSync(NodePath.join(store.manifests, "s1.json"), JSON.stringify(legacy))
    assert.deepStrictEqual(await store.collect(async () => new Set(["s1"])), { manifests: 0, chunks: 0, bytes: 0 })
    await restoresSame(store, "s1", disk)
    // A scoped push does not reuse the legacy parent's chunks: it stores its own.
    const next = await store.push({
      snapshotId: "s2",
      machineId: "m",
      scope: "org-a",
      disk,
      tier: "warm",
      parentId: "s1",
      now: 2
    })
    assert.strictEqual(next.uploaded_bytes, next.size_bytes)
  })

  it("the cold tier stores compressed chunks and restores the same files", async () => {
    const store = await open()
    const disk = makeDisk()
    NodeFs.writeFileSync(NodePath.join(disk, "root", "zeros"), Buffer.alloc(4 * MiB))
    const cold = await store.push({ snapshotId: "c1", machineId: "m", scope: "org-a", disk, tier: "cold", now: 1 })
    const warm = await store.push({ snapshotId: "w1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    assert.strictEqual(cold.size_bytes, warm.size_bytes)
    // Both store the zero chunk once; compressed, it is nearly nothing.
    assert.isBelow(cold.uploaded_bytes, warm.uploaded_bytes - MiB + 64 * 1024)
    await restoresSame(store, "c1", disk)
  })

  it("a chunk whose bytes changed on disk fails the restore instead of restoring wrong bytes", async () => {
    const store = await open()
    const disk = makeDisk()
    const made = await store.push({ snapshotId: "s1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    assert.isAbove(made.uploaded_bytes, 0)
    const manifest = (await store.read("s1"))!.manifest
    const file = manifest.entries.find((entry) => entry.path === "root/big.bin")!
    NodeFs.writeFileSync(store.chunkPath("warm", chunkKey("org-a", file.chunks![0]!)), "tampered")
    const target = NodePath.join(tempDir(), "restored")
    const failed = await store.restore("s1", target).then(() => undefined, (error) => error)
    assert.match(String(failed), /does not hold the bytes/)
    assert.isFalse(NodeFs.existsSync(target))
  })
})
