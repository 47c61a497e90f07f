/**
 * Copying a snapshot between two hosts' stores (src/snapshots/store/ChunkCopy.ts), on real folders:
 * the holder serves only well-formed names inside its store; the copy fetches exactly the chunks
 * the receiving store misses (a second copy fetches nothing), refuses wrong bytes and a manifest of
 * another digest, and the result restores the disk byte for byte.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { copyMissing, type FetchFromHolder, NotOnHolder, servedBytes } from "../../src/snapshots/store/ChunkCopy.js"
import { ChunkStore, CorruptChunk } from "../../src/snapshots/store/ChunkStore.js"
import type { Tier } from "../../src/snapshots/store/Manifest.js"

const dirs: Array<string> = []
const tempDir = () => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-copy-"))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) NodeFs.rmSync(dir, { recursive: true, force: true })
})

const KiB = 1024
const scope = "0190aaaa-0000-7000-8000-000000000001"

/** A disk of four files of distinct bytes: four chunks of 4 KiB each, and one shared twice. */
const makeDisk = () => {
  const disk = NodePath.join(tempDir(), "disk")
  NodeFs.mkdirSync(NodePath.join(disk, "root"), { recursive: true })
  const shared = NodeCrypto.randomBytes(4 * KiB)
  NodeFs.writeFileSync(NodePath.join(disk, "root", "a.bin"), NodeCrypto.randomBytes(8 * KiB))
  NodeFs.writeFileSync(NodePath.join(disk, "root", "b.bin"), shared)
  NodeFs.writeFileSync(NodePath.join(disk, "root", "c.bin"), shared)
  NodeFs.writeFileSync(NodePath.join(disk, "root", "d.txt"), "hello\n")
  return disk
}

const openStore = () => new ChunkStore(NodePath.join(tempDir(), "snapshots"), 4 * KiB).open()

/** The holder's node as the copy sees it: `servedBytes` of its store, every path counted. */
const holderOf = (store: ChunkStore) => {
  const asked: Array<string> = []
  const fetch: FetchFromHolder = async (path) => {
    asked.push(path)
    return servedBytes(store, path)
  }
  return { asked, fetch }
}

const push = (store: ChunkStore, disk: string, snapshotId: string, tier: Tier, parentId?: string) =>
  store.push({ snapshotId, machineId: "m", scope, disk, tier, parentId, now: 0 })

const id = (n: number) => `0190aaaa-0000-7000-8000-00000000010${n}`

const chunkFiles = (store: ChunkStore) =>
  NodeFs.readdirSync(store.chunks, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).length

const filesOf = (root: string) =>
  Object.fromEntries(
    ["a.bin", "b.bin", "c.bin", "d.txt"].map((name) => [name, NodeFs.readFileSync(NodePath.join(root, "root", name))])
  )

describe("chunk copy between hosts", () => {
  for (const tier of ["warm", "cold"] as const) {
    it(`copies exactly the missing chunks, then none (${tier})`, async () => {
      const [holder, receiver] = [await openStore(), await openStore()]
      const disk = makeDisk()
      const first = await push(holder, disk, id(1), tier)
      const source = holderOf(holder)
      const copied = await copyMissing(receiver, id(1), first.manifest, source.fetch)
      // a.bin: 2 chunks, b and c: 1 shared, d: 1.
      assert.strictEqual(copied.chunks, 4)
      assert.strictEqual(source.asked.filter((path) => path.startsWith("/internal/chunks/")).length, 4)
      assert.strictEqual(chunkFiles(receiver), 4)
      const target = NodePath.join(tempDir(), "restored")
      await receiver.restore(id(1), target)
      assert.deepStrictEqual(filesOf(target), filesOf(disk))

      // Again: the manifest is there, nothing is asked.
      source.asked.length = 0
      assert.deepStrictEqual(await copyMissing(receiver, id(1), first.manifest, source.fetch), { chunks: 0, bytes: 0 })
      assert.deepStrictEqual(source.asked, [])

      // One file changed: a new snapshot moves its chunk only.
      NodeFs.writeFileSync(NodePath.join(disk, "root", "d.txt"), "changed\n")
      const second = await push(holder, disk, id(2), tier, id(1))
      const again = await copyMissing(receiver, id(2), second.manifest, source.fetch)
      assert.strictEqual(again.chunks, 1)
      assert.strictEqual(source.asked.filter((path) => path.startsWith("/internal/chunks/")).length, 1)
    })
  }

  it("refuses a chunk whose bytes are not its hash, and a manifest of another digest; writes no manifest", async () => {
    const [holder, receiver] = [await openStore(), await openStore()]
    const first = await push(holder, makeDisk(), id(1), "warm")
    const lying: FetchFromHolder = async (path) =>
      path.startsWith("/internal/chunks/") ? NodeCrypto.randomBytes(4 * KiB) : servedBytes(holder, path)
    const refused = await copyMissing(receiver, id(1), first.manifest, lying).catch((error) => error)
    assert.instanceOf(refused, CorruptChunk)
    assert.strictEqual(await receiver.read(id(1)), undefined)
    assert.strictEqual(chunkFiles(receiver), 0)

    const otherDigest = `sha256:${"0".repeat(64)}`
    const wrong = await copyMissing(receiver, id(1), otherDigest, holderOf(holder).fetch).catch((error) => error)
    assert.instanceOf(wrong, CorruptChunk)
    assert.strictEqual(await receiver.read(id(1)), undefined)

    const gone = await copyMissing(receiver, id(3), first.manifest, holderOf(holder).fetch).catch((error) => error)
    assert.instanceOf(gone, NotOnHolder)
  })

  it("serves only well-formed names inside the store", async () => {
    const holder = await openStore()
    const first = await push(holder, makeDisk(), id(1), "warm")
    assert.isDefined(await servedBytes(holder, `/internal/snapshots/${id(1)}/manifest`))
    NodeFs.writeFileSync(NodePath.join(holder.root, "secret"), "not a chunk")
    const key = NodeFs.readdirSync(NodePath.join(holder.chunks, "warm"), { recursive: true })
      .map(String).find((name) => /^[0-9a-f]{2}\/[0-9a-f]{64}$/.test(name))!.slice(3)
    assert.isDefined(await servedBytes(holder, `/internal/chunks/warm/${key}`))
    for (
      const path of [
        `/internal/chunks/cold/${key}`,
        `/internal/chunks/warm/${key.toUpperCase()}`,
        `/internal/chunks/warm/../../secret`,
        `/internal/chunks/warm/..%2F..%2Fsecret`,
        `/internal/chunks/hot/${key}`,
        `/internal/chunks/warm/${key}?x=1`,
        `/internal/snapshots/../secret/manifest`,
        `/internal/snapshots/${id(1)}.json/manifest`,
        `/internal/snapshots/${id(2)}/manifest`,
        "/internal/chunks/warm/",
        "/etc/passwd"
      ]
    ) {
      assert.strictEqual(await servedBytes(holder, path), undefined, path)
    }
    assert.isString(first.manifest)
  })
})
