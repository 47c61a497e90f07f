/**
 * Each sandbox machine's disk is an ext4 file system of its size's `disk_mib` in a sparse image,
 * `machines/<id>/disk.img`, loop-mounted at the machine's disk folder from create to destroy: a
 * write past the size fails inside the machine (ENOSPC) and touches nothing else, and a fork copies
 * one frozen file instead of walking a tree the machine can change (docs/drivers.md "Disk").
 *
 * The host-side work is disk.sh, run as text. The empty file system of each size is made once
 * with mkfs.ext4 (`<data dir>/disk-templates/ext4-<MiB>.img`) and copied sparsely at create.
 */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { embeddedText } from "../Embedded.js"
import { DriverError } from "../MachineDriver.js"
import { attempt, diskFolders, ensureDisk, type MachinePaths } from "../MachineFiles.js"

const script = embeddedText("sandbox/disk.sh")

/** The machine's image beside its disk folder. */
export const imageOf = (paths: MachinePaths) => NodePath.join(paths.machine, "disk.img")

export const templateOf = (dataDir: string, mib: number) => NodePath.join(dataDir, "disk-templates", `ext4-${mib}.img`)

const hostEnv = { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" }

/** Runs disk.sh `args` on libuv's side (cp and mount take tens of ms: not on the event loop). */
const run = (what: string, args: ReadonlyArray<string>) =>
  Effect.async<void, DriverError>((resume) => {
    const child = NodeChild.spawn("/bin/sh", ["-c", script, "svc-disk", ...args], {
      env: hostEnv,
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk.slice(0, 4000)))
    child.on("error", (cause) => resume(Effect.fail(new DriverError({ message: `${what}: ${String(cause)}`, cause }))))
    child.on("close", (code) =>
      resume(
        code === 0
          ? Effect.void
          : Effect.fail(new DriverError({ message: `${what}: ${stderr.trim() || `disk.sh exit ${code}`}` }))
      ))
  })

/** The mount points of svc's mount namespace (mountinfo's field 5, octal escapes undone). */
export const mountPoints = (): ReadonlySet<string> => {
  const points = new Set<string>()
  try {
    for (const line of NodeFs.readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
      const field = line.split(" ")[4]
      if (field !== undefined) {
        points.add(field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
      }
    }
  } catch {
    // no /proc
  }
  return points
}

/** The folder's path as mountinfo names it (the data dir may be reached through a symlink). */
const realPath = (path: string) => {
  try {
    return NodeFs.realpathSync(path)
  } catch {
    return path
  }
}

export const isMounted = (paths: MachinePaths, points: ReadonlySet<string> = mountPoints()) =>
  points.has(realPath(paths.disk))

/** One template made at a time per size in this process (a second waiter finds it made). */
const templateLocks = new Map<string, Effect.Semaphore>()
const lockOf = (path: string) => {
  let lock = templateLocks.get(path)
  if (lock === undefined) templateLocks.set(path, lock = Effect.unsafeMakeSemaphore(1))
  return lock
}

export const ensureTemplate = (dataDir: string, mib: number) => {
  const path = templateOf(dataDir, mib)
  return Effect.suspend(() =>
    NodeFs.existsSync(path)
      ? Effect.succeed(path)
      : lockOf(path).withPermits(1)(Effect.as(run("disk template", ["template", path, String(mib)]), path))
  )
}

/**
 * The machine's disk, mounted: its image (made from the size's template when missing, with the
 * files of a plain disk folder copied in) loop-mounted at the disk folder, the disk folders made.
 */
export const ensure = (dataDir: string, paths: MachinePaths, mib: number) =>
  machineLock(paths.machine).withPermits(1)(
    Effect.gen(function*() {
      // Mounted already (every start but the first): the folders are made here, without a shell.
      if (isMounted(paths)) return yield* attempt("disk", () => ensureDisk(paths))
      const template = yield* ensureTemplate(dataDir, mib)
      yield* run("disk", ["ensure", template, imageOf(paths), paths.disk, ...diskFolders])
    }).pipe(Effect.uninterruptible)
  )

/**
 * One mount or unmount at a time per machine, each run to its end (not interrupted while its shell
 * runs): a destroy never unmounts ahead of a create's mount that is still under way.
 */
const machineLocks = new Map<string, Effect.Semaphore>()
const machineLock = (machine: string) => {
  let lock = machineLocks.get(machine)
  if (lock === undefined) machineLocks.set(machine, lock = Effect.unsafeMakeSemaphore(1))
  return lock
}

/** Mounts the image of every machine that has one and is not mounted (svc's start after a host reboot). */
export const mountAll = (dataDir: string) =>
  Effect.gen(function*() {
    const folder = NodePath.join(dataDir, "machines")
    const ids = NodeFs.existsSync(folder) ? NodeFs.readdirSync(folder) : []
    const points = mountPoints()
    for (const id of ids) {
      const machine = NodePath.join(folder, id)
      const paths = { machine, disk: NodePath.join(machine, "disk"), run: "", cpu: "" }
      yield* thawFileSystem(paths).pipe(
        Effect.catchAll((error) => Effect.logWarning(`machine ${id}: its disk: ${error.message}`))
      )
      if (!NodeFs.existsSync(imageOf(paths)) || isMounted(paths, points)) continue
      yield* run("disk", ["ensure", "", imageOf(paths), paths.disk, ...diskFolders]).pipe(
        Effect.catchAll((error) => Effect.logWarning(`machine ${id}: its disk: ${error.message}`))
      )
    }
  })

export const unmount = (paths: MachinePaths) =>
  machineLock(paths.machine).withPermits(1)(
    Effect.suspend(() => isMounted(paths) ? run("disk unmount", ["unmount", paths.disk]) : Effect.void)
  )

/** Every settled mount under `dir` unmounted (lazily): a test's data dir can then go whole. */
export const unmountUnder = (dir: string) => {
  const root = realPath(dir)
  for (const point of [...mountPoints()].filter((p) => p.startsWith(`${root}/`)).sort().reverse()) {
    NodeChild.spawnSync("umount", ["-l", point], { stdio: "ignore" })
  }
}

/** Present while a copy holds the machine's file system frozen (fsfreeze). */
const frozenMarkerOf = (paths: MachinePaths) => NodePath.join(paths.machine, "disk.frozen")

/**
 * A sparse copy of the machine's image to `target` (made whole or not at all), its file system
 * frozen meanwhile: what was written is in the image, and nothing writes until the copy is done.
 * Answers the bytes the copy holds on the host.
 */
export const copyImage = (from: MachinePaths, target: string) =>
  Effect.flatMap(
    run("disk copy", ["copy", imageOf(from), target, from.disk, frozenMarkerOf(from)]),
    () => attempt("disk copy", () => NodeFs.statSync(target).blocks * 512)
  )

/** Thaws the machine's file system when a copy that was killed left it frozen. */
export const thawFileSystem = (paths: MachinePaths) =>
  Effect.suspend(() =>
    NodeFs.existsSync(frozenMarkerOf(paths))
      ? run("disk thaw", ["thaw", paths.disk, frozenMarkerOf(paths)])
      : Effect.void
  )

/** Whether the machine's disk is an image (else a plain folder: a machine from before images, still running). */
export const hasImage = (paths: MachinePaths) => NodeFs.existsSync(imageOf(paths))

let probed: string | undefined | null = null

/**
 * Why machine disks cannot be made here (no mkfs.ext4, no loop devices, no right to mount), or
 * undefined when they can: a 64 MiB image is made, mounted, written and removed, once per process.
 */
export const unusable = (): string | undefined => {
  if (probed !== null) return probed
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-disk-probe-"))
  try {
    if (!NodeFs.existsSync("/dev/loop-control") && !NodeFs.existsSync("/dev/loop0")) {
      return probed = "no loop devices (/dev/loop-control): load the loop module (modprobe loop)"
    }
    const paths = { machine: dir, disk: NodePath.join(dir, "disk"), run: "", cpu: "" }
    const template = NodePath.join(dir, "template.img")
    const steps = [
      ["template", template, "64"],
      ["ensure", template, imageOf(paths), paths.disk, "root"],
      ["unmount", paths.disk]
    ]
    for (const args of steps) {
      const result = NodeChild.spawnSync("/bin/sh", ["-c", script, "svc-disk", ...args], {
        env: hostEnv,
        encoding: "utf8"
      })
      if (result.status !== 0) {
        return probed = `cannot make machine disks (a loop-mounted ext4 image; needs e2fsprogs, util-linux, ` +
          `loop devices and svc running as root): ${(result.stderr ?? "").trim() || String(result.error)}`
      }
    }
    return probed = undefined
  } finally {
    NodeChild.spawnSync("umount", ["-l", NodePath.join(dir, "disk")], { stdio: "ignore" })
    NodeFs.rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Bytes in use on the machine's mounted file system (statfs: cheap, no walk of the tree) and its
 * image's size; nothing while the image is not mounted (statfs would read the host's file system).
 */
export const usage = (paths: MachinePaths): { readonly usedBytes?: number; readonly sizeBytes?: number } => {
  try {
    if (NodeFs.statSync(paths.disk).dev === NodeFs.statSync(paths.machine).dev) return {}
    const fs = NodeFs.statfsSync(paths.disk)
    return { usedBytes: (fs.blocks - fs.bfree) * fs.bsize, sizeBytes: NodeFs.statSync(imageOf(paths)).size }
  } catch {
    return {}
  }
}
