/**
 * Starting a machine's sandbox (bwrap) and telling when it is up, two ways with one shape:
 *
 * - `hostSpawner`: through the spawner (spawner.pl), a small Perl process svc starts once.
 *   A spawn from svc forks the whole svc process (milliseconds with its heap, the event loop
 *   standing still, and the fork's copy-on-write faults slow the child down until it execs);
 *   the spawner's fork is of a few MB, off svc's event loop, and it joins the cgroups and waits
 *   for the sandbox itself. Sandboxes are not svc's children, so svc reaps none of them.
 * - `inProcess`: svc spawns bwrap itself, on a host without Perl.
 *
 * Both give bwrap `--info-fd 3` (its pid 1's host pid) and a pipe on fd 4 that the machine's first
 * process writes a byte to once it runs (Bwrap.ts): pid 1 has set the machine's root up by then,
 * so nothing polls.
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import type * as NodeNet from "node:net"
import * as NodePath from "node:path"
import { childrenOf, hostPath, takeReapedCpuSeconds } from "../HostProcess.js"
import * as Cgroups from "./Cgroups.js"
import { spawnerScript } from "./SpawnerScript.js"

export interface SandboxStart {
  /** bwrap and its arguments (with `--info-fd 3`), behind the network set-up of Network.ts. */
  readonly argv: ReadonlyArray<string>
  /**
   * What the spawner runs instead once it made the machine's network namespace itself (lo up, as
   * net.sh's boot does): bwrap without the `unshare` and the shell of `argv`, and beside it
   * `netJob` when given (Network.bootCommand); the boot is ready once both are.
   */
  readonly afterNetns?: ReadonlyArray<string> | undefined
  readonly netJob?: ReadonlyArray<string> | undefined
  /** bwrap's whole environment, which it hands to the machine. */
  readonly env: Readonly<Record<string, string>>
  /** bwrap's stdout and stderr, truncated first. */
  readonly logFile: string
  /** pid 1 and the first process join these as soon as they are known (isolated: before bwrap). */
  readonly groups: Cgroups.Groups
  /** A machine of its own user namespace (spawner.pl `isolate`; only the spawner does it). */
  readonly isolation?: Isolation | undefined
}

/** What the spawner makes before bwrap for an isolated machine (docs/drivers.md "Isolation"). */
export interface Isolation {
  /** The first host uid and gid of the machine's range (UidRanges.ts): its root. */
  readonly uidBase: number
  /** Mounted at `<stage>/disk`, idmapped to the machine's user namespace. */
  readonly diskDir: string
  /** An empty host folder, where the spawner mounts a tmpfs with the disk and the tools (Bwrap.stage). */
  readonly stage: string
  /** Mounted at `<stage>/tools` read-only, when it exists. */
  readonly toolsDir: string | undefined
  /** Bound over themselves read-only, nosuid and nodev, locked for the machine. */
  readonly readOnly: ReadonlyArray<string>
  /** Hidden behind /dev/null, locked. */
  readonly masked: ReadonlyArray<string>
  /** Bytes bwrap reads on fds 7, 8, ... (Bwrap.isolatedFds). */
  readonly data: ReadonlyArray<Uint8Array>
}

export interface StartEvents {
  /** bwrap runs, as `pid` (what a timeout kills). */
  readonly spawned: (pid: number) => void
  /** The machine is up: `pid` is the host pid of its pid 1. */
  readonly ready: (pid: number) => void
  /** It failed before it was up. */
  readonly failed: (reason: string) => void
}

export interface Spawner {
  readonly start: (request: SandboxStart, on: StartEvents) => void
  /** Ends the spawner process, if there is one (sandboxes already up run on). */
  readonly close: () => void
}

/** Spawns bwrap from svc (a fork of svc): for hosts without Perl. */
export const inProcess: Spawner = {
  close: () => undefined,
  start: (request, on) => {
    if (request.isolation !== undefined) return on.failed("an isolated machine needs the spawner (Perl under /usr)")
    let child: NodeChild.ChildProcess
    try {
      const log = NodeFs.openSync(request.logFile, "w", 0o600)
      try {
        child = NodeChild.spawn(request.argv[0]!, request.argv.slice(1), {
          detached: true,
          stdio: ["ignore", log, log, "pipe", "pipe"],
          env: request.env
        })
      } finally {
        NodeFs.closeSync(log)
      }
    } catch (cause) {
      return on.failed(`cannot run bwrap: ${String(cause)}`)
    }
    child.unref()
    let pid1: number | undefined
    let up = false
    const settle = () => {
      if (pid1 === undefined || !up) return
      // The first process may have been forked before pid 1 joined: it joins now.
      for (const first of childrenOf(pid1)) Cgroups.join(request.groups, first)
      on.ready(pid1)
    }
    child.on("error", (error) => on.failed(`cannot run bwrap: ${error.message}`))
    child.on("exit", (code, signal) => {
      // What the sandbox used was counted at stop: not for the next command that exits.
      takeReapedCpuSeconds()
      on.failed(`bwrap ended (${signal === null ? `exit ${code}` : signal})`)
    })
    if (child.pid !== undefined) on.spawned(child.pid)
    const info = child.stdio[3] as NodeNet.Socket
    let text = ""
    info.on("error", () => undefined)
    info.on("data", (chunk) => {
      text += chunk
      if (!text.includes("}")) return
      info.destroy()
      const pid = Number(/"child-pid"\s*:\s*(\d+)/.exec(text)?.[1])
      if (!(pid > 0)) return on.failed("bwrap did not tell its pid 1")
      Cgroups.join(request.groups, pid)
      pid1 = pid
      settle()
    })
    // Without a byte, the first process never ran: bwrap ends, and its exit says so.
    const ready = child.stdio[4] as NodeNet.Socket
    ready.on("error", () => undefined)
    ready.once("data", () => {
      ready.destroy()
      up = true
      settle()
    })
  }
}

/** The architectures whose unshare(2) number spawner.pl knows. */
const nativeNetns = process.arch === "x64" || process.arch === "arm64"

const isolationFields = (isolation: Isolation | undefined) =>
  isolation === undefined ? [""] : [
    String(isolation.uidBase),
    isolation.diskDir,
    isolation.stage,
    isolation.toolsDir ?? "",
    String(isolation.readOnly.length),
    ...isolation.readOnly,
    String(isolation.masked.length),
    ...isolation.masked,
    String(isolation.data.length),
    ...isolation.data.map((bytes) => Buffer.from(bytes).toString("hex"))
  ]

/**
 * `tag, log file, netns, [net argc, net argv...], group count, cgroup.procs files..., isolation
 * fields, argc, argv..., env name, value, ...` (spawner.pl)
 */
const requestFrame = (tag: number, request: SandboxStart) => {
  const native = nativeNetns ? request.afterNetns : undefined
  const argv = native ?? request.argv
  const netJob = request.netJob ?? []
  const payload = Buffer.from(
    [
      String(tag),
      request.logFile,
      ...(native === undefined ? [""] : ["1", String(netJob.length), ...netJob]),
      String(request.groups.length),
      ...request.groups.map((dir) => NodePath.join(dir, "cgroup.procs")),
      ...isolationFields(request.isolation),
      String(argv.length),
      ...argv,
      ...Object.entries(request.env).flat()
    ].join("\0")
  )
  const header = Buffer.allocUnsafe(4)
  header.writeUInt32BE(payload.length, 0)
  return Buffer.concat([header, payload])
}

/**
 * Starts sandboxes through the spawner, run with `perl` (any Perl of the host: it runs outside
 * the machines). The spawner is started at the first boot and again after it ended; when svc
 * exits, it kills the sandboxes still coming up and exits too.
 */
export const hostSpawner = (perl: string): Spawner => {
  let current: { readonly child: NodeChild.ChildProcess; readonly input: NodeNet.Socket } | undefined
  const pending = new Map<number, StartEvents>()
  let nextTag = 1

  const launch = () => {
    const child = NodeChild.spawn(perl, ["-e", spawnerScript], {
      detached: true,
      stdio: ["pipe", "pipe", "inherit"],
      env: { PATH: hostPath }
    })
    const input = child.stdin as NodeNet.Socket
    const output = child.stdout as NodeNet.Socket
    const spawner = { child, input }
    // Neither the spawner nor its pipes keep svc running.
    child.unref()
    input.unref()
    output.unref()
    input.on("error", () => undefined)
    let lines = ""
    output.on("data", (chunk) => {
      lines += chunk
      let end: number
      while ((end = lines.indexOf("\n")) >= 0) {
        const [kind, tag, ...rest] = lines.slice(0, end).split(" ")
        lines = lines.slice(end + 1)
        const events = pending.get(Number(tag))
        if (events === undefined) continue
        if (kind === "S") events.spawned(Number(rest[0]))
        if (kind === "R") events.ready(Number(rest[0]))
        if (kind === "F") events.failed(rest.join(" "))
        if (kind !== "S") pending.delete(Number(tag))
      }
    })
    const ended = (reason: string) => {
      if (current === spawner) current = undefined
      for (const events of pending.values()) events.failed(reason)
      pending.clear()
    }
    child.on("error", (error) => ended(`cannot run the spawner: ${error.message}`))
    child.on("exit", (code) => {
      // Its children's CPU time (bwrap's) is not a command's.
      takeReapedCpuSeconds()
      ended(`the spawner ended (${code})`)
    })
    return spawner
  }

  return {
    start: (request, on) => {
      current ??= launch()
      const tag = nextTag++
      pending.set(tag, on)
      current.input.write(requestFrame(tag, request))
    },
    close: () => {
      current?.input.end()
      current = undefined
    }
  }
}
