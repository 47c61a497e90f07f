/**
 * A machine's disk as a list of entries with the metadata a restore must give back: type, mode,
 * owner, modification time, symlink targets. Hard links are kept as separate files; sockets,
 * fifos and devices are skipped (a machine's disk is a folder of ordinary files).
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"

export interface TreeEntry {
  /** Relative to the disk, `/`-separated; "" is the disk folder itself. */
  readonly path: string
  readonly type: "dir" | "file" | "symlink"
  /** Permission bits (with setuid, setgid and sticky). */
  readonly mode: number
  readonly uid: number
  readonly gid: number
  /** Modification time in nanoseconds since the epoch, as a decimal string (exact). */
  readonly mtime: string
  readonly size: number
  readonly target?: string | undefined
}

/** What says a file may have changed since a snapshot: when all of it is equal, its chunks are reused. */
export interface FileIdentity {
  readonly ino: string
  readonly ctime: string
}

export interface WalkedEntry extends TreeEntry {
  readonly identity: FileIdentity
}

/** Every entry under `root`, parents before children, names in byte order within a folder. */
export const walk = async (root: string): Promise<Array<WalkedEntry>> => {
  const entries: Array<WalkedEntry> = []
  const visit = async (relative: string) => {
    const absolute = relative === "" ? root : NodePath.join(root, relative)
    const stat = await NodeFs.lstat(absolute, { bigint: true })
    const base = {
      path: relative,
      mode: Number(stat.mode & 0o7777n),
      uid: Number(stat.uid),
      gid: Number(stat.gid),
      mtime: stat.mtimeNs.toString(),
      identity: { ino: stat.ino.toString(), ctime: stat.ctimeNs.toString() }
    }
    if (stat.isDirectory()) {
      entries.push({ ...base, type: "dir", size: 0 })
      const names = (await NodeFs.readdir(absolute)).sort()
      for (const name of names) await visit(relative === "" ? name : `${relative}/${name}`)
    } else if (stat.isFile()) {
      entries.push({ ...base, type: "file", size: Number(stat.size) })
    } else if (stat.isSymbolicLink()) {
      entries.push({ ...base, type: "symlink", size: 0, target: await NodeFs.readlink(absolute) })
    }
  }
  await visit("")
  return entries
}

/** Seconds as the double utimes takes: exact to a few hundred nanoseconds. */
const seconds = (nanoseconds: string) => {
  const value = BigInt(nanoseconds)
  return Number(value / 1_000_000_000n) + Number(value % 1_000_000_000n) / 1e9
}

/**
 * Gives `absolute` the entry's owner, mode and modification time. Owners are set only where the
 * process may (as root); folders must be done after their contents, whose creation moves their time.
 */
export const applyMetadata = async (absolute: string, entry: TreeEntry) => {
  await NodeFs.lchown(absolute, entry.uid, entry.gid).catch(() => undefined)
  if (entry.type !== "symlink") await NodeFs.chmod(absolute, entry.mode)
  const time = seconds(entry.mtime)
  await NodeFs.lutimes(absolute, time, time)
}

/** Runs `work` over `items` with at most `limit` at a time. */
export const inPool = async <A>(items: ReadonlyArray<A>, limit: number, work: (item: A) => Promise<void>) => {
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!
      await work(item)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

/** Creates the folders and symlinks of `entries` under `root` (files are the caller's). */
export const makeSkeleton = async (root: string, entries: ReadonlyArray<TreeEntry>) => {
  for (const entry of entries) {
    const absolute = entry.path === "" ? root : NodePath.join(root, entry.path)
    if (entry.type === "dir") await NodeFs.mkdir(absolute, { recursive: true })
    else if (entry.type === "symlink") await NodeFs.symlink(entry.target ?? "", absolute)
  }
}

/** Metadata of every entry: files and symlinks (many at once), then folders, deepest first. */
export const finishMetadata = async (root: string, entries: ReadonlyArray<TreeEntry>) => {
  const at = (entry: TreeEntry) => entry.path === "" ? root : NodePath.join(root, entry.path)
  await inPool(entries.filter((entry) => entry.type !== "dir"), 16, (entry) => applyMetadata(at(entry), entry))
  const folders = entries.filter((entry) => entry.type === "dir")
  for (let index = folders.length - 1; index >= 0; index--) await applyMetadata(at(folders[index]!), folders[index]!)
}

/**
 * Copies the folder `from` to `to` (which must not exist) with its metadata; `onBytes` hears of
 * every file copied. Files are copied by the kernel (copy_file_range) where it can.
 */
export const copyTree = async (from: string, to: string, onBytes: (bytes: number) => void) => {
  const entries = await walk(from)
  await makeSkeleton(to, entries)
  const files = entries.filter((entry) => entry.type === "file")
  await inPool(files, 16, async (entry) => {
    await NodeFs.copyFile(NodePath.join(from, entry.path), NodePath.join(to, entry.path))
    onBytes(entry.size)
  })
  await finishMetadata(to, entries)
  return entries
}

export const totalBytes = (entries: ReadonlyArray<TreeEntry>) =>
  entries.reduce((sum, entry) => sum + (entry.type === "file" ? entry.size : 0), 0)

/**
 * Removes a tree (a partial copy a crash left behind may hold a whole disk) in an `rm -rf` child
 * process. Node's recursive rm, even its promise form, holds the event loop for much of the time it
 * takes (a few hundred ms for 20,000 files), and every machine's actor shares that loop.
 */
export const removeTree = (path: string) =>
  new Promise<void>((resolve, reject) => {
    const child = NodeChild.spawn("rm", ["-rf", "--", path], { stdio: "ignore" })
    child.on("error", reject)
    child.on("exit", (code) => code === 0 ? resolve() : reject(new Error(`rm -rf ${path} exited with ${code}`)))
  })
