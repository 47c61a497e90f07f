/**
 * The `process` driver: a machine is a folder on the host and its commands are plain child
 * processes of svc. It isolates nothing (a command sees the whole host, as the user svc runs as,
 * and an absolute path is a host path); it exists for development on hosts without bubblewrap,
 * and says so when it starts.
 *
 * Layout: the one of every driver (MachineFiles); the machine's home is `disk/root`. `run.json`
 * ({bootId, hostBootId, env}) exists while the machine runs; nothing runs for an idle machine.
 * Every process of a machine carries `SVC_MACHINE_ID` in its environment, which is how stop finds
 * and ends them all, background and `setsid` ones included, even after svc restarted.
 */
import { Effect, Layer } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { wrapOnce } from "../ExactlyOnce.js"
import {
  hostBootId,
  hostPath,
  killPid,
  pidsWithEnv,
  procStat,
  residentBytes,
  runCommand,
  waitFor
} from "../HostProcess.js"
import { type LaunchRequest, spawnLauncher } from "../launcher/Launcher.js"
import { launcherScript } from "../launcher/Script.js"
import {
  DriverError,
  impossibleExec,
  MachineDriver,
  type MachineDriverShape,
  NotRunning,
  type OutputStream,
  withKnownImage
} from "../MachineDriver.js"
import {
  attempt,
  cpuCredit,
  cpuFold,
  cpuTotal,
  destroyWith,
  ensureDisk,
  freezeWith,
  machinePaths,
  observeWith,
  readJson,
  thawWith,
  writeAtomic
} from "../MachineFiles.js"
import { connectLocal } from "../PortConnections.js"

/** The host's Perl, for terminals (the launcher makes their PTY). */
const hostPerl = () => ["/usr/bin/perl", "/bin/perl"].find((path) => NodeFs.existsSync(path))

interface RunRecord {
  readonly bootId: string
  readonly hostBootId: string
  readonly env: Readonly<Record<string, string>>
}

/** The variable that marks every process of a machine. */
const marker = "SVC_MACHINE_ID"

/** How long processes get after SIGTERM before SIGKILL. */
const graceMs = 5_000

export const make = (
  options: { readonly dataDir: string; readonly agentsDir?: string | undefined }
): MachineDriverShape => {
  const paths = (id: string) => machinePaths(options.dataDir, id)

  /** The run record of a machine running in this host boot, if any. */
  const running = (id: string) => {
    const record = readJson<RunRecord>(paths(id).run)
    return record !== undefined && record.hostBootId === hostBootId() ? record : undefined
  }

  /** Host processes that belong to the machine (found by the variable every one inherits). */
  const processesOf = (id: string) => pidsWithEnv(marker, id)

  /** CPU seconds of the machine's live processes (those that ended were credited at their exit). */
  const liveCpu = (id: string) => processesOf(id).reduce((sum, pid) => sum + (procStat(pid)?.cpuSeconds ?? 0), 0)

  const stop: MachineDriverShape["stop"] = (id, { force }) =>
    Effect.gen(function*() {
      const record = yield* attempt("stop", () => running(id))
      if (record !== undefined) yield* attempt("stop", () => cpuFold(paths(id).cpu, record.bootId, liveCpu(id)))
      if (!force) {
        for (const pid of processesOf(id)) killPid(pid, "SIGTERM")
        yield* waitFor(() => processesOf(id).length === 0, graceMs)
      }
      // Again until none is left: a process may fork while it is being killed.
      const gone = yield* waitFor(() => {
        const left = processesOf(id)
        for (const pid of left) killPid(pid, "SIGKILL")
        return left.length === 0
      }, graceMs)
      if (!gone) return yield* new DriverError({ message: `stop: processes of machine ${id} did not end` })
      yield* attempt("stop", () => NodeFs.rmSync(paths(id).run, { force: true }))
    })

  /**
   * A terminal: the sandbox driver's launcher (launcher.pl) run on the host for this one command,
   * which makes the PTY; it carries the machine's marker, so stop ends it with the rest.
   */
  const onTerminal = (
    id: string,
    request: LaunchRequest,
    onOutput: (stream: OutputStream, chunk: Uint8Array) => Effect.Effect<void>
  ) =>
    Effect.suspend((): Effect.Effect<{ readonly exitCode: number }, DriverError | NotRunning> => {
      const perl = hostPerl()
      if (perl === undefined) {
        return Effect.fail(
          new DriverError({ message: "terminals need Perl on the host", permanent: "terminal_unavailable" })
        )
      }
      return Effect.acquireUseRelease(
        Effect.sync(() =>
          spawnLauncher(
            ["/usr/bin/env", `${marker}=${id}`, perl, "-e", launcherScript],
            NodePath.join(paths(id).machine, "launcher.log")
          )
        ),
        (launcher) =>
          launcher.run(request, onOutput).pipe(
            Effect.catchTag("LauncherGone", (gone): Effect.Effect<never, DriverError | NotRunning> =>
              running(id) === undefined
                ? Effect.fail(new NotRunning({ machineId: id }))
                : Effect.fail(new DriverError({ message: `terminal in machine ${id}: ${gone.reason}` })))
          ),
        (launcher) => Effect.sync(launcher.close)
      )
    })

  return {
    name: "process",
    isolates: false,
    // Host processes read the host's folder where it is.
    toolsPath: options.agentsDir,
    create: (spec) => withKnownImage(spec, attempt("create", () => ensureDisk(paths(spec.id)))),
    start: (spec) =>
      withKnownImage(
        spec,
        attempt("start", () => {
          const current = running(spec.id)
          if (current !== undefined) return { bootId: current.bootId }
          if (!NodeFs.existsSync(paths(spec.id).disk)) throw new Error(`machine ${spec.id} has no disk`)
          ensureDisk(paths(spec.id))
          const record: RunRecord = { bootId: NodeCrypto.randomUUID(), hostBootId: hostBootId(), env: spec.env }
          writeAtomic(paths(spec.id).run, JSON.stringify(record))
          return { bootId: record.bootId }
        })
      ),
    stop,
    destroy: destroyWith(options.dataDir, stop),
    observe: observeWith(options.dataDir, running),
    // Commands share the host's network whatever the setting: nothing to change.
    setInternetAccess: () => Effect.void,
    exec: (id, request, onOutput) =>
      Effect.suspend((): Effect.Effect<{ readonly exitCode: number }, DriverError | NotRunning> => {
        const impossible = impossibleExec(request, id)
        if (impossible !== undefined) return Effect.fail(impossible)
        const record = running(id)
        if (record === undefined) return Effect.fail(new NotRunning({ machineId: id }))
        const disk = paths(id).disk
        const home = NodePath.join(disk, "root")
        const cwd = NodePath.resolve(home, request.cwd ?? ".")
        const env = {
          PATH: hostPath,
          HOME: home,
          TMPDIR: NodePath.join(disk, "tmp"),
          ...record.env,
          ...request.env,
          [marker]: id
        }
        if (request.terminal !== undefined) return onTerminal(id, { ...request, cwd, env }, onOutput)
        return runCommand(wrapOnce(request.argv, request.once), {
          cwd,
          env,
          stdin: request.stdin,
          input: request.input,
          onExit: (seconds) => cpuCredit(paths(id).cpu, seconds)
        }, onOutput)
      }),
    // Machines here are host processes: their ports are the host's.
    connectPort: (id, port) =>
      Effect.suspend(() =>
        running(id) === undefined
          ? Effect.fail(new NotRunning({ machineId: id }))
          : Effect.succeed(connectLocal(port))
      ),
    diskPath: (id) => paths(id).disk,
    freeze: freezeWith(processesOf),
    thaw: thawWith(processesOf),
    cpuSeconds: (id) =>
      attempt("cpu", () => {
        const record = running(id)
        return cpuTotal(
          paths(id).cpu,
          record === undefined ? undefined : { bootId: record.bootId, seconds: liveCpu(id) }
        )
      }),
    // Host processes limited by nothing: their count and resident memory (shared pages counted
    // once per process); the disk is a folder of the host's file system, its use not read.
    stats: (id) =>
      attempt("stats", () => {
        const record = running(id)
        const pids = record === undefined ? [] : processesOf(id)
        const cpuSeconds = cpuTotal(
          paths(id).cpu,
          record === undefined ? undefined : { bootId: record.bootId, seconds: liveCpu(id) }
        )
        if (record === undefined) return { running: false, cpuSeconds }
        return {
          running: true,
          cpuSeconds,
          processes: pids.length,
          memoryBytes: pids.reduce((sum, pid) => sum + residentBytes(pid), 0)
        }
      })
  }
}

export const layer = (options: { readonly dataDir: string; readonly agentsDir?: string | undefined }) =>
  Layer.effect(
    MachineDriver,
    Effect.as(
      Effect.logWarning(
        "SVC_RUNTIME=process: machines are plain host processes of svc; nothing is isolated (development only)"
      ),
      make(options)
    )
  )
