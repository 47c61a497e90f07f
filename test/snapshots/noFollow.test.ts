/**
 * Host-side file work never follows a machine's links, judged from the host. The attacker is a
 * host process standing in for the machine's root: a snapshot is taken of a stopped machine (no
 * process of its own runs then), so the race is played against the store directly, at the level
 * where the host touches the machine's files (src/snapshots/store/Tree.ts). A secret file and
 * folder sit beside the disk, where a link followed from the host would reach them.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as NodeChild from "node:child_process"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { ChunkStore } from "../../src/snapshots/store/ChunkStore.js"
import type { Manifest } from "../../src/snapshots/store/Manifest.js"
import { copyTree, walk } from "../../src/snapshots/store/Tree.js"

const dirs: Array<string> = []
const children: Array<NodeChild.ChildProcess> = []
const mounts: Array<string> = []
const tempDir = () => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-nofollow-"))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL")
  for (const mount of mounts.splice(0)) NodeChild.spawnSync("umount", ["-l", mount])
  for (const dir of dirs.splice(0)) NodeFs.rmSync(dir, { recursive: true, force: true })
})

const sha256 = (data: Uint8Array | string) => NodeCrypto.createHash("sha256").update(data).digest("hex")

/** A host secret (a file and a folder holding one) beside a disk with one file and one folder. */
const setting = () => {
  const base = tempDir()
  const secret = `host secret ${NodeCrypto.randomUUID()}\n`
  const hostFile = NodePath.join(base, "secret.txt")
  const hostFolder = NodePath.join(base, "secrets")
  NodeFs.writeFileSync(hostFile, secret)
  NodeFs.mkdirSync(hostFolder)
  NodeFs.writeFileSync(NodePath.join(hostFolder, "key"), secret)
  const disk = NodePath.join(base, "disk")
  NodeFs.mkdirSync(NodePath.join(disk, "root", "folder"), { recursive: true })
  NodeFs.writeFileSync(NodePath.join(disk, "root", "file"), "machine's own bytes\n")
  NodeFs.writeFileSync(NodePath.join(disk, "root", "folder", "inner"), "machine's own inner bytes\n")
  return { base, secret, hostFile, hostFolder, disk }
}

/** renameat2(2) with RENAME_EXCHANGE: the two names swap in one step, over and over. */
const swapForever = (folder: string, pairs: ReadonlyArray<readonly [string, string]>) => {
  const call = process.arch === "arm64" ? 276 : 316
  const swaps = pairs.map(([a, b]) =>
    `{ my ($a, $b) = ("${a}", "${b}"); syscall(${call}, -100, $a, -100, $b, 2) == 0 or die "renameat2: $!" }`
  ).join(" ")
  const child = NodeChild.spawn("perl", ["-e", `$| = 1; print "go\\n"; while (1) { ${swaps} }`], {
    cwd: folder,
    stdio: ["ignore", "pipe", "inherit"]
  })
  children.push(child)
  return new Promise<void>((resolve, reject) => {
    child.stdout.once("data", () => resolve())
    child.once("exit", (code) => reject(new Error(`the swapping loop ended (${code})`)))
  })
}

const openStore = () => new ChunkStore(NodePath.join(tempDir(), "snapshots")).open()

/**
 * Every regular file's bytes in a tree (read from the host after the fact, by path: it is svc's own
 * copy), never through a link the tree holds. Not readdir's `recursive`: since Node 22.12 and 23 its
 * `withFileTypes` form also lists what is behind a link to a folder (nodejs/node#55714), which here
 * is the host's secret folder that the copy rightly keeps as a link.
 */
const contentsOf = (root: string): Array<string> =>
  NodeFs.readdirSync(root).flatMap((name) => {
    const path = NodePath.join(root, name)
    const stat = NodeFs.lstatSync(path)
    if (stat.isDirectory()) return contentsOf(path)
    return stat.isFile() ? [NodeFs.readFileSync(path, "utf8")] : []
  })

describe("host-side walks never follow the machine", () => {
  it("a file and a folder swapped for links to host files in a tight loop never put the host's bytes in a snapshot", async () => {
    const { disk, hostFile, hostFolder, secret } = setting()
    const root = NodePath.join(disk, "root")
    NodeFs.symlinkSync(hostFile, NodePath.join(root, "swap-file"))
    NodeFs.symlinkSync(hostFolder, NodePath.join(root, "swap-folder"))
    await swapForever(root, [["file", "swap-file"], ["folder", "swap-folder"]])
    const store = await openStore()
    const secretHash = sha256(secret)
    for (let round = 0; round < 12; round++) {
      const id = `s${round}`
      await store.push({ snapshotId: id, machineId: "m", scope: "org-a", disk, tier: "warm", now: round })
      const manifest = (await store.read(id))!.manifest
      for (const entry of manifest.entries) {
        assert.notInclude(entry.chunks ?? [], secretHash, `${entry.path} holds the host's secret`)
        assert.isFalse(entry.path.endsWith("/key"), `the walk went into the host's folder: ${entry.path}`)
      }
      // What the store would give back holds none of it either.
      const restored = NodePath.join(tempDir(), "restored")
      await store.restore(id, restored)
      for (const text of contentsOf(restored)) assert.notStrictEqual(text, secret)
    }
  })

  it("the same swap during a tree copy never copies the host's bytes", async () => {
    const { disk, hostFile, hostFolder, secret } = setting()
    const root = NodePath.join(disk, "root")
    NodeFs.symlinkSync(hostFile, NodePath.join(root, "swap-file"))
    NodeFs.symlinkSync(hostFolder, NodePath.join(root, "swap-folder"))
    await swapForever(root, [["file", "swap-file"], ["folder", "swap-folder"]])
    for (let round = 0; round < 12; round++) {
      const copy = NodePath.join(tempDir(), "copy")
      await copyTree(disk, copy, () => undefined)
      for (const text of contentsOf(copy)) assert.notStrictEqual(text, secret)
    }
  })

  it("links to /, to ../.. and to a host file are stored as links and restored as links", async () => {
    const { base, disk, hostFile } = setting()
    const root = NodePath.join(disk, "root")
    NodeFs.symlinkSync("/", NodePath.join(root, "to-root"))
    NodeFs.symlinkSync("../..", NodePath.join(root, "up"))
    NodeFs.symlinkSync(hostFile, NodePath.join(root, "to-secret"))
    const store = await openStore()
    const summary = await store.push({ snapshotId: "s1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    const manifest = (await store.read("s1"))!.manifest
    const byPath = new Map(manifest.entries.map((entry) => [entry.path, entry]))
    assert.deepInclude(byPath.get("root/to-root"), { type: "symlink", target: "/" })
    assert.deepInclude(byPath.get("root/up"), { type: "symlink", target: "../.." })
    assert.deepInclude(byPath.get("root/to-secret"), { type: "symlink", target: hostFile })
    assert.isFalse(manifest.entries.some((entry) => /^root\/(to-root|up|to-secret)\//.test(entry.path)))
    const ownBytes = "machine's own bytes\n".length + "machine's own inner bytes\n".length
    assert.strictEqual(summary.size_bytes, ownBytes, "nothing behind a link was counted")

    const restored = NodePath.join(base, "restored")
    await store.restore("s1", restored)
    assert.strictEqual(NodeFs.readlinkSync(NodePath.join(restored, "root", "to-root")), "/")
    assert.strictEqual(NodeFs.readlinkSync(NodePath.join(restored, "root", "up")), "../..")
    assert.strictEqual(NodeFs.readlinkSync(NodePath.join(restored, "root", "to-secret")), hostFile)
    assert.strictEqual(NodeFs.readFileSync(hostFile, "utf8").startsWith("host secret"), true)
  })

  it("a mount point and a fifo inside the disk are skipped, without blocking the walk", async (context) => {
    const { disk, hostFolder } = setting()
    const root = NodePath.join(disk, "root")
    NodeChild.execFileSync("mkfifo", [NodePath.join(root, "fifo")])
    const mountPoint = NodePath.join(root, "mounted")
    NodeFs.mkdirSync(mountPoint)
    const mounted = NodeChild.spawnSync("mount", ["--bind", hostFolder, mountPoint]).status === 0
    if (mounted) mounts.push(mountPoint)
    const paths = (await walk(disk)).map((entry) => entry.path)
    assert.notInclude(paths, "root/fifo")
    assert.isFalse(paths.some((path) => path.startsWith("root/mounted/")), "the walk entered a mount point")
    if (mounted) {
      // A bind mount of the same file system is still another mount: told apart by the mount id.
      // The folder itself may be listed (it is the machine's), never what is mounted on it.
      assert.notInclude(paths, "root/mounted/key")
    } else {
      context.skip()
    }
  })
})

describe("a restore never writes outside its target", () => {
  /** Stores `manifest` (with one real chunk holding `bytes`) as snapshot `id`. */
  const crafted = async (store: ChunkStore, id: string, entries: Manifest["entries"], bytes: string) => {
    const hash = sha256(bytes)
    NodeFs.writeFileSync(store.chunkPath("warm", hash), bytes)
    const manifest: Manifest = {
      format: 1,
      snapshot_id: id,
      machine_id: "m",
      tier: "warm",
      chunk_size: 1024 * 1024,
      generation: 1,
      parent_snapshot_id: null,
      parent: null,
      created_at: 1,
      disk_synced: true,
      size_bytes: bytes.length,
      uploaded_bytes: bytes.length,
      entries: entries.map((entry) => entry.type === "file" ? { ...entry, chunks: [hash] } : entry)
    }
    NodeFs.writeFileSync(NodePath.join(store.manifests, `${id}.json`), JSON.stringify(manifest))
  }
  const folder = (path: string) => ({ path, type: "dir" as const, mode: 0o755, uid: 0, gid: 0, mtime: "0", size: 0 })
  const file = (path: string) => ({ path, type: "file" as const, mode: 0o644, uid: 0, gid: 0, mtime: "0", size: 5 })
  const link = (path: string, target: string) => ({
    path,
    type: "symlink" as const,
    mode: 0o777,
    uid: 0,
    gid: 0,
    mtime: "0",
    size: 0,
    target
  })

  it("a file named under a link, a path that climbs out and a name given twice are refused; nothing lands outside", async () => {
    const store = await openStore()
    const outside = tempDir()
    const cases: Record<string, Manifest["entries"]> = {
      under_link: [folder(""), link("escape", outside), file("escape/pwned")],
      climbing: [folder(""), file("../pwned")],
      absolute_like: [folder(""), file("/pwned")],
      dot_dot_inside: [folder(""), folder("a"), file("a/../../pwned")],
      twice: [folder(""), link("x", outside), folder("x"), file("x/pwned")],
      link_then_file: [folder(""), link("y", NodePath.join(outside, "pwned")), file("y")]
    }
    for (const [name, entries] of Object.entries(cases)) {
      await crafted(store, name, entries, "pwned")
      const target = NodePath.join(tempDir(), "restored")
      const failed = await store.restore(name, target).then(() => false, () => true)
      assert.isTrue(failed, `${name}: the restore went through`)
      assert.isFalse(NodeFs.existsSync(target), `${name}: a partial target appeared`)
      assert.deepStrictEqual(NodeFs.readdirSync(outside), [], `${name}: something was written outside`)
    }
  })

  it("a snapshot holding a link to a host folder restores the link and writes nothing through it", async () => {
    const { disk, hostFolder } = setting()
    const before = NodeFs.readdirSync(hostFolder)
    NodeFs.symlinkSync(hostFolder, NodePath.join(disk, "root", "host"))
    const store = await openStore()
    await store.push({ snapshotId: "s1", machineId: "m", scope: "org-a", disk, tier: "warm", now: 1 })
    const restored = NodePath.join(tempDir(), "restored")
    await store.restore("s1", restored)
    assert.strictEqual(NodeFs.readlinkSync(NodePath.join(restored, "root", "host")), hostFolder)
    assert.deepStrictEqual(NodeFs.readdirSync(hostFolder), before)
  })
})
