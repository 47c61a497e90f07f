/**
 * A machine's disk as a list of entries with the metadata a restore must give back: type, mode,
 * owner, modification time, symlink targets. Hard links are kept as separate files; sockets,
 * fifos and devices are skipped (a machine's disk is a folder of ordinary files).
 *
 * Every host-side read of a machine's files goes through `walk` and every host-side write of a
 * tree through `writeTree`: the machine owns its files and may change them while svc works (a file
 * swapped for a link to a host file), so no path inside a machine is ever resolved by name from
 * the host (docs/snapshots.md "Links are never followed"). Node has no `openat`: the walk holds a
 * descriptor of each folder it is in and names its entries through `/proc/self/fd/<fd>/<name>`,
 * where the kernel resolves the folder by the descriptor and only `<name>` (one component, never
 * a link: O_NOFOLLOW) by name. Entries on another device (mount points) are skipped.
 */
import * as NodeChild from "node:child_process"
import type { BigIntStats } from "node:fs"
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

const { O_DIRECTORY, O_NOCTTY, O_NOFOLLOW, O_NONBLOCK, O_RDONLY } = NodeFs.constants
/** A folder, by descriptor; never a link. */
const folderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
/** A file for reading: never a link, and a fifo or device swapped in cannot block the open. */
const readFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY

/** The path by which the kernel resolves `name` inside the folder open as `folder`, and nothing else. */
const inside = (folder: NodeFs.FileHandle, name?: string) =>
  name === undefined ? `/proc/self/fd/${folder.fd}` : `/proc/self/fd/${folder.fd}/${name}`

/** The mount a descriptor is on: a bind mount of the same file system has the same device, not the same mount. */
const mountOf = async (handle: NodeFs.FileHandle) =>
  /^mnt_id:\s*(\d+)$/m.exec(await NodeFs.readFile(`/proc/self/fdinfo/${handle.fd}`, "utf8"))?.[1]

/** Errors that say the entry changed under the walk (the machine's doing): the entry is left out. */
const changed = (error: unknown) => {
  const code = (error as { code?: string } | undefined)?.code
  return code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP" || code === "EINVAL" || code === "ENXIO"
}

/** Opens a file the walk listed; undefined when the name no longer holds that very file. */
export type OpenWalked = () => Promise<NodeFs.FileHandle | undefined>

/**
 * What the walk does with a file it lists: answers the entry to keep (with what it read through
 * `open`), or undefined to leave the file out (it changed meanwhile).
 */
export type FileVisitor<F> = (entry: WalkedEntry, open: OpenWalked) => Promise<F | undefined>

/** At most `limit` tasks at once; `run` waits for a free slot, so the caller goes no faster than the work. */
const pool = (limit: number) => {
  const running = new Set<Promise<void>>()
  let failure: { readonly error: unknown } | undefined
  return {
    run: async (task: () => Promise<void>) => {
      while (running.size >= limit) await Promise.race(running)
      if (failure !== undefined) throw failure.error
      const promise: Promise<void> = task().catch((error) => void (failure ??= { error })).finally(() =>
        running.delete(promise)
      )
      running.add(promise)
    },
    drain: async () => {
      while (running.size > 0) await Promise.race(running)
      if (failure !== undefined) throw failure.error
    }
  }
}

export interface WalkHooks<F> {
  /** Each file, while its folder is held open (at most `parallel` at once). */
  readonly file?: FileVisitor<F> | undefined
  /** Each folder, the root first, before anything in it. */
  readonly folder?: ((entry: WalkedEntry) => Promise<void>) | undefined
  readonly parallel?: number | undefined
}

/**
 * Every entry under `root`, parents before children, names in byte order within a folder. No link
 * is followed and nothing on another device than `root` is listed. Files go through `hooks.file`
 * while their folder is held open; without it they are listed only.
 */
export const walk = async <F extends TreeEntry = WalkedEntry>(
  root: string,
  hooks: WalkHooks<F> = {}
): Promise<Array<WalkedEntry | F>> => {
  const slots: Array<WalkedEntry | F | undefined> = []
  const files = pool(hooks.parallel ?? 12)
  const entryOf = (path: string, stat: BigIntStats) => ({
    path,
    mode: Number(stat.mode & 0o7777n),
    uid: Number(stat.uid),
    gid: Number(stat.gid),
    mtime: stat.mtimeNs.toString(),
    identity: { ino: stat.ino.toString(), ctime: stat.ctimeNs.toString() }
  })
  /** undefined where the entry changed under the walk (see `changed`). */
  const unlessChanged = <A>(promise: Promise<A>) =>
    promise.catch((error) => {
      if (changed(error)) return undefined
      throw error
    })
  const rootHandle = await NodeFs.open(root, folderFlags)
  let rootStat: BigIntStats
  let rootMount: string | undefined
  try {
    rootStat = await rootHandle.stat({ bigint: true })
    rootMount = await mountOf(rootHandle)
  } catch (error) {
    await rootHandle.close()
    throw error
  }
  const device = rootStat.dev

  /** Lists the folder open as `folder` (its entry `entry`), which it closes once its files are done. */
  const visitFolder = async (folder: NodeFs.FileHandle, entry: WalkedEntry) => {
    let users = 1
    const release = async () => {
      if (--users === 0) await folder.close()
    }
    try {
      slots.push(entry)
      await hooks.folder?.(entry)
      const names = (await NodeFs.readdir(inside(folder))).sort()
      for (const name of names) {
        const path = entry.path === "" ? name : `${entry.path}/${name}`
        const stat = await unlessChanged(NodeFs.lstat(inside(folder, name), { bigint: true }))
        if (stat === undefined || stat.dev !== device) continue
        if (stat.isSymbolicLink()) {
          const target = await unlessChanged(NodeFs.readlink(inside(folder, name)))
          if (target !== undefined) slots.push({ ...entryOf(path, stat), type: "symlink", size: 0, target })
        } else if (stat.isDirectory()) {
          const child = await unlessChanged(NodeFs.open(inside(folder, name), folderFlags))
          if (child === undefined) continue
          const opened = await child.stat({ bigint: true }).catch(async (error) => {
            await child.close()
            throw error
          })
          if (opened.ino !== stat.ino || opened.dev !== device || (await mountOf(child)) !== rootMount) {
            await child.close()
            continue
          }
          await visitFolder(child, { ...entryOf(path, opened), type: "dir", size: 0 })
        } else if (stat.isFile()) {
          const file: WalkedEntry = { ...entryOf(path, stat), type: "file", size: Number(stat.size) }
          const slot = slots.push(file) - 1
          const visit = hooks.file
          if (visit === undefined) continue
          const open: OpenWalked = async () => {
            const handle = await unlessChanged(NodeFs.open(inside(folder, name), readFlags))
            if (handle === undefined) return undefined
            const opened = await handle.stat({ bigint: true }).catch(() => undefined)
            if (opened?.isFile() && opened.ino === stat.ino && opened.dev === device) return handle
            await handle.close()
            return undefined
          }
          users++
          await files.run(async () => {
            try {
              slots[slot] = await visit(file, open)
            } finally {
              await release()
            }
          }).catch(async (error) => {
            await release()
            throw error
          })
        }
      }
    } finally {
      await release()
    }
  }

  try {
    await visitFolder(rootHandle, { ...entryOf("", rootStat), type: "dir", size: 0 })
  } finally {
    await files.drain()
  }
  return slots.filter((entry) => entry !== undefined)
}

/** Seconds as the double utimes takes: exact to a few hundred nanoseconds. */
const seconds = (nanoseconds: string) => {
  const value = BigInt(nanoseconds)
  return Number(value / 1_000_000_000n) + Number(value % 1_000_000_000n) / 1e9
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

export class UnsafeTree extends Error {}

/** A relative path of one or more plain names (no "", ".", ".." or NUL): nothing that climbs out. */
const checkedPath = (path: string) => {
  const names = path.split("/")
  for (const name of names) {
    if (name === "" || name === "." || name === ".." || name.includes("\0")) {
      throw new UnsafeTree(`the tree names an unsafe path ${JSON.stringify(path)}`)
    }
  }
  return names
}

const { O_CREAT, O_EXCL, O_WRONLY } = NodeFs.constants
/** A new file: never an existing one, never through a link. */
const createFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW

/**
 * Builds a tree at a folder that must not exist, entry by entry, parents before children.
 * Everything is created new (O_EXCL, O_NOFOLLOW) under folders this writer made, so no entry,
 * however named, lands outside the root: an entry whose parent is not a folder of the tree is
 * refused. Owners are set only where the process may (as root); folders get their metadata last
 * (`finish`), after their contents, whose creation moves their time.
 */
export class TreeWriter {
  private readonly folders = new Map<string, TreeEntry>()
  private readonly links: Array<TreeEntry> = []

  private constructor(readonly root: string) {}

  static async create(root: string, entry: TreeEntry) {
    if (entry.path !== "" || entry.type !== "dir") throw new UnsafeTree("a tree starts with its root folder")
    await NodeFs.mkdir(root, { mode: 0o700 })
    const writer = new TreeWriter(root)
    writer.folders.set("", entry)
    return writer
  }

  /** The entry's path under the root, once its parent is known to be a folder this writer made. */
  private place(entry: TreeEntry) {
    const names = checkedPath(entry.path)
    if (!this.folders.has(names.slice(0, -1).join("/"))) {
      throw new UnsafeTree(`the tree names ${JSON.stringify(entry.path)} outside a folder of its own`)
    }
    return NodePath.join(this.root, entry.path)
  }

  async folder(entry: TreeEntry) {
    await NodeFs.mkdir(this.place(entry), { mode: 0o700 })
    this.folders.set(entry.path, entry)
  }

  async link(entry: TreeEntry) {
    await NodeFs.symlink(entry.target ?? "", this.place(entry))
    this.links.push(entry)
  }

  /** Creates the file, lets `fill` write it through its handle, then gives it its metadata. */
  async file(entry: TreeEntry, fill: (handle: NodeFs.FileHandle) => Promise<void>) {
    const handle = await NodeFs.open(this.place(entry), createFlags, 0o600)
    try {
      await fill(handle)
      await handle.chown(entry.uid, entry.gid).catch(() => undefined)
      await handle.chmod(entry.mode)
      await handle.utimes(seconds(entry.mtime), seconds(entry.mtime))
    } finally {
      await handle.close()
    }
  }

  /** Metadata of the links, then of the folders, deepest first. */
  async finish(parallel = 16) {
    const at = (entry: TreeEntry) => NodePath.join(this.root, entry.path)
    await inPool(this.links, parallel, async (link) => {
      await NodeFs.lchown(at(link), link.uid, link.gid).catch(() => undefined)
      await NodeFs.lutimes(at(link), seconds(link.mtime), seconds(link.mtime))
    })
    const folders = [...this.folders.values()]
    for (let index = folders.length - 1; index >= 0; index--) {
      const folder = folders[index]!
      const handle = await NodeFs.open(at(folder), folderFlags)
      try {
        await handle.chown(folder.uid, folder.gid).catch(() => undefined)
        await handle.chmod(folder.mode)
        await handle.utimes(seconds(folder.mtime), seconds(folder.mtime))
      } finally {
        await handle.close()
      }
    }
  }
}

/** Creates the tree `entries` (as a manifest lists them) at `root`; `fill` writes each file. */
export const writeTree = async <E extends TreeEntry>(
  root: string,
  entries: ReadonlyArray<E>,
  fill: (entry: E, handle: NodeFs.FileHandle) => Promise<void>,
  parallel = 12
) => {
  const [first, ...rest] = entries
  if (first === undefined) throw new UnsafeTree("a tree starts with its root folder")
  const writer = await TreeWriter.create(root, first)
  const files = pool(parallel)
  try {
    for (const entry of rest) {
      if (entry.type === "dir") await writer.folder(entry)
      else if (entry.type === "symlink") await writer.link(entry)
      else await files.run(() => writer.file(entry, (handle) => fill(entry, handle)))
    }
  } finally {
    await files.drain()
  }
  await writer.finish()
}

/**
 * Copies the folder `from` to `to` (which must not exist) with its metadata; `onBytes` hears of
 * every file copied. Files are copied by the kernel (copy_file_range) where it can, between the
 * very files the walk and the writer opened (named by their `/proc/self/fd` links).
 */
export const copyTree = async (from: string, to: string, onBytes: (bytes: number) => void) => {
  let writer: TreeWriter | undefined
  const entries = await walk(from, {
    folder: async (entry) => {
      if (writer === undefined) writer = await TreeWriter.create(to, entry)
      else await writer.folder(entry)
    },
    file: async (entry, open) => {
      const source = await open()
      if (source === undefined) return undefined
      try {
        await writer!.file(
          entry,
          (target) => NodeFs.copyFile(`/proc/self/fd/${source.fd}`, `/proc/self/fd/${target.fd}`)
        )
      } finally {
        await source.close()
      }
      onBytes(entry.size)
      return entry
    },
    parallel: 16
  })
  for (const entry of entries) if (entry.type === "symlink") await writer!.link(entry)
  await writer!.finish()
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
