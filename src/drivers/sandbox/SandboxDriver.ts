/**
 * The `sandbox` driver: each machine is a bubblewrap sandbox with its own user, pid, mount, ipc,
 * uts and cgroup namespaces, a network namespace of its own (below), the host's
 * /usr and /etc read-only, and its own writable disk under `<data dir>/machines/<id>/disk`
 * (docs/drivers.md).
 *
 * Every machine has a network namespace of its own, made by svc (Network.ts): only `lo`, plus an
 * outbound path through slirp4netns while it has internet access, which `setInternetAccess`
 * attaches and detaches in the running machine.
 *
 * A sandbox is started detached (its own session, not a child svc waits for), so machines keep
 * running while svc restarts. `run.json` names it: the host pid of its pid 1, that process's start
 * time and the host's boot id (together they cannot name another process), and the machine's boot
 * id. Any svc process that reads it adopts the machine. Exec enters the running sandbox with
 * `nsenter`, so a background process started by one exec is there for the next, and ends with the
 * machine's pid 1 at stop.
 */
import { Clock, Effect, Layer, Runtime, Schedule } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type * as NodeStream from "node:stream"
import { defaultSizes, type SizeTable } from "../../kernel/config/MachineSizes.js"
import { wrapOnce } from "../ExactlyOnce.js"
import {
  hostBootId,
  hostPath,
  innermostPid,
  isAlive,
  killPid,
  pidNamespace,
  pidsInNamespace,
  procStat,
  runCommand,
  waitFor
} from "../HostProcess.js"
import { type Launcher, spawnLauncher } from "../launcher/Launcher.js"
import { launcherScript } from "../launcher/Script.js"
import {
  DriverError,
  type ExecRequest,
  impossibleExec,
  MachineDriver,
  type MachineDriverShape,
  type MachineSpec,
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
import { connectLocal, connectThroughNamespace, servedBy, sharesHostNetwork } from "../PortConnections.js"
import { bwrapArgs, hostnameOf, machineHome, machinePath, toolsMount } from "./Bwrap.js"
import * as Cgroups from "./Cgroups.js"
import * as Disk from "./Disk.js"
import * as Freezer from "./Freezer.js"
import { isolationOf, seccompHex } from "./Isolation.js"
import { missingIsolation } from "./IsolationCheck.js"
import * as Network from "./Network.js"
import { hostSpawner, inProcess, type Spawner } from "./Spawner.js"
import * as UidRanges from "./UidRanges.js"

interface RunRecord {
  /** Host pid of the sandbox's pid 1 (bubblewrap's init). */
  readonly pid: number
  readonly starttime: number
  readonly hostBootId: string
  readonly bootId: string
  readonly env: Readonly<Record<string, string>>
  /** The machine's cgroups (one folder per hierarchy), when the host let svc make them. */
  readonly groups?: Cgroups.Groups | undefined
  /** The groups' CPU count when the machine booted, when the boot's CPU time is counted there. */
  readonly cgroupCpuAtBoot?: number | undefined
  /**
   * Whether the machine should have its internet path now (set at boot, changed by
   * setInternetAccess before it acts). Absent: booted by an svc before machines had a network
   * namespace of svc's making; such a boot keeps the network it has until it is restarted.
   */
  readonly internet?: boolean | undefined
  /** The machine's network namespace (`net:[inode]`), so that a change never enters another one. */
  readonly netns?: string | undefined
}

/** A terminal's PTY is made by the launcher: a host without Perl under /usr has none. */
const noTerminals = (id: string) =>
  new DriverError({
    message: `terminal in machine ${id}: terminals need the launcher (Perl under /usr on the host)`,
    permanent: "terminal_unavailable"
  })

const bootTimeoutMs = 10_000
/** How long an exec whose launcher ended waits to see whether that was its machine stopping. */
const launcherGraceMs = 1_000
/** How long processes get after SIGTERM before the machine's pid 1 is killed. */
const graceMs = 5_000

/** An executable on PATH, as an absolute path. */
const which = (name: string) => {
  for (const dir of hostPath.split(":")) {
    const path = NodePath.join(dir || ".", name)
    try {
      NodeFs.accessSync(path, NodeFs.constants.X_OK)
      return NodePath.resolve(path)
    } catch {
      // not here
    }
  }
  return undefined
}

export interface Tools extends Network.NetTools {
  readonly bwrap: string
  readonly nsenter: string
  /** Perl under /usr (so machines see it too), for the launcher; without it exec enters every time. */
  readonly perl?: string | undefined
}

export const make = (
  options: {
    readonly dataDir: string
    readonly cgroups: Cgroups.Cgroups
    readonly tools: Tools
    /** The agents' tools folder on the host, bound read-only into every machine it boots. */
    readonly agentsDir?: string | undefined
    /** What starts the sandboxes: svc itself (a fork of svc) unless given. */
    readonly spawner?: Spawner | undefined
    /** What machines with internet access may reach besides the internet (Network.ts). */
    readonly network?: Network.NetworkSettings | undefined
    /** The limits of each size (`SVC_SIZES`); the defaults of extensions.md §5 unless given. */
    readonly sizes?: SizeTable | undefined
    /** Machines in user namespaces of their own (docs/drivers.md "Isolation"); needs the spawner. */
    readonly isolated?: boolean | undefined
  },
  warnOnce: (message: string) => void = () => undefined
): MachineDriverShape & {
  readonly reconcileNetworks: Effect.Effect<void, DriverError>
  readonly refreshNetworks: Effect.Effect<void>
  readonly thawFrozen: Effect.Effect<void, DriverError>
} => {
  const { cgroups, tools } = options
  const sizes = options.sizes ?? defaultSizes
  const spawner = options.spawner ?? inProcess
  const paths = (id: string) => machinePaths(options.dataDir, id)
  const netOf = (id: string) => Network.netPaths(paths(id).machine)
  const network = options.network ?? Network.defaultSettings
  const resolvTarget = Network.resolvConfTarget()

  /**
   * The run record of each machine this driver booted or has seen running, kept while its pid 1
   * lives: a check of the live process then answers `running` without reading run.json (every exec
   * asks). A boot by another svc process on the data dir ends this one's pid 1 first (a stop).
   */
  const booted = new Map<string, RunRecord>()

  /** The run record when it names a live sandbox, else undefined. */
  const running = (id: string) => {
    const known = booted.get(id)
    if (known !== undefined && isAlive(known.pid, known.starttime)) return known
    booted.delete(id)
    const record = readJson<RunRecord>(paths(id).run)
    if (record === undefined || record.hostBootId !== hostBootId()) return undefined
    if (!isAlive(record.pid, record.starttime)) return undefined
    booted.set(id, record)
    return record
  }

  /** Host pids of every process in the sandbox, its pid 1 included. */
  const processesOf = (record: RunRecord) => {
    const namespace = pidNamespace(record.pid)
    return namespace === undefined || !isAlive(record.pid, record.starttime) ? [] : pidsInNamespace(namespace)
  }

  /** The launcher of each running machine this driver has run a command in, with its boot. */
  const launchers = new Map<string, { readonly bootId: string; readonly launcher: Launcher }>()

  /**
   * The machine's launcher (src/drivers/launcher), started on its first exec of a boot: entered
   * like a command (in the machine's cgroups first, where it has them), so what it forks is inside.
   */
  const launcherOf = (id: string, record: RunRecord, perl: string) => {
    const known = launchers.get(id)
    if (known !== undefined && known.bootId === record.bootId && known.launcher.alive()) return known.launcher
    known?.launcher.close()
    const enter = [
      tools.nsenter,
      `--target=${record.pid}`,
      "--all",
      "--root",
      "--wdns=/",
      "--",
      perl,
      "-e",
      launcherScript,
      ...(options.isolated === true ? [seccompHex] : [])
    ]
    const launcher = spawnLauncher(
      record.groups === undefined ? enter : Cgroups.joinThen(record.groups, enter),
      NodePath.join(paths(id).machine, "launcher.log"),
      { PATH: machinePath }
    )
    launchers.set(id, { bootId: record.bootId, launcher })
    return launcher
  }

  /**
   * CPU seconds of the current boot: the machine's cgroup count since the boot, else the times of
   * the live processes (pid 1's include every orphan it reaped). Commands that exec ran and that
   * have exited are credited to the ledger at their exit when there is no cgroup count.
   */
  const bootCpu = (record: RunRecord) => {
    if (record.cgroupCpuAtBoot !== undefined && record.groups !== undefined) {
      const now = Cgroups.cpuSeconds(record.groups)
      if (now !== undefined) return Math.max(0, now - record.cgroupCpuAtBoot)
    }
    return processesOf(record).reduce((sum, pid) => sum + (procStat(pid)?.cpuSeconds ?? 0), 0)
  }

  const boot = (spec: MachineSpec, groups: Cgroups.Groups) =>
    Effect.async<RunRecord, DriverError>((resume) => {
      const machine = paths(spec.id)
      const bootId = NodeCrypto.randomUUID()
      const logFile = NodePath.join(machine.machine, "sandbox.log")
      const logText = () => {
        try {
          return NodeFs.readFileSync(logFile, "utf8").trim().slice(0, 2000)
        } catch {
          return ""
        }
      }
      let bwrapPid: number | undefined
      let done = false
      const finish = (result: Effect.Effect<RunRecord, DriverError>) => {
        if (done) return
        done = true
        clearTimeout(timer)
        resume(result)
      }
      const failed = (reason: string) => {
        // A spawner may tell of bwrap's end after the boot was answered: nothing to read then.
        if (done) return
        const log = logText()
        finish(Effect.fail(new DriverError({ message: log === "" ? reason : `${reason}: ${log}` })))
      }
      const timer = setTimeout(() => {
        if (bwrapPid !== undefined) killPid(bwrapPid, "SIGKILL")
        failed(`bwrap did not start within ${bootTimeoutMs} ms`)
      }, bootTimeoutMs)
      const ready = (pid: number) => {
        if (done) return
        const stat = procStat(pid)
        if (stat === undefined) return failed("the sandbox ended at once")
        const record: RunRecord = {
          pid,
          starttime: stat.starttime,
          hostBootId: hostBootId(),
          bootId,
          env: spec.env,
          internet: spec.internetAccess,
          netns: Network.netnsOf(pid),
          ...(groups.length === 0 ? {} : { groups, cgroupCpuAtBoot: Cgroups.cpuSeconds(groups) })
        }
        try {
          writeAtomic(machine.run, JSON.stringify(record))
        } catch (cause) {
          killPid(pid, "SIGKILL")
          Network.killSlirp(netOf(spec.id))
          return finish(Effect.fail(new DriverError({ message: "cannot record the sandbox", cause })))
        }
        booted.set(spec.id, record)
        finish(Effect.succeed(record))
      }
      const net = netOf(spec.id)
      // The machine's network namespace is made and set up before bwrap (Network.ts).
      const command = Network.bootCommand(tools, network, net, spec.internetAccess, [
        tools.bwrap,
        ...bwrapArgs({
          diskDir: machine.disk,
          hostname: hostnameOf(spec.id),
          resolvConf: net.resolvConf,
          resolvTarget,
          toolsDir: options.agentsDir,
          infoFd: 3,
          readyFd: 4,
          isolated: options.isolated
        })
      ])
      if (typeof command === "string") return finish(Effect.fail(new DriverError({ message: command })))
      let isolation
      try {
        isolation = options.isolated === true
          ? isolationOf({
            dataDir: options.dataDir,
            id: spec.id,
            diskDir: machine.disk,
            toolsDir: options.agentsDir,
            resolvConf: net.resolvConf
          })
          : undefined
      } catch (cause) {
        return finish(Effect.fail(new DriverError({ message: "cannot prepare the machine's isolation", cause })))
      }
      spawner.start({
        argv: command.argv,
        afterNetns: command.afterNetns,
        netJob: command.netJob,
        // bwrap hands its environment to the machine: not on its command line, which every host user can read
        env: { PATH: machinePath, HOME: machineHome, ...spec.env },
        logFile,
        groups,
        isolation
      }, {
        spawned: (pid) => void (bwrapPid = pid),
        ready,
        failed
      })
    })

  /** Exec without a launcher: each command enters the machine with nsenter (and a cgroup-joining shell). */
  const enterAndRun = (
    id: string,
    record: RunRecord,
    request: ExecRequest & { readonly cwd: string; readonly env: Readonly<Record<string, string>> },
    onOutput: (stream: OutputStream, chunk: Uint8Array) => Effect.Effect<void>,
    stoppedMeanwhile: () => boolean
  ) => {
    const enter = [
      tools.nsenter,
      `--target=${record.pid}`,
      "--all",
      "--root",
      `--wdns=${request.cwd}`,
      "--",
      ...wrapOnce(request.argv, request.once)
    ]
    return runCommand(
      // With cgroups, a small shell joins the machine's groups first and then becomes nsenter,
      // so the command and everything it forks is counted and limited (about 0.5 ms more).
      record.groups === undefined ? enter : Cgroups.joinThen(record.groups, enter),
      {
        cwd: "/",
        env: request.env,
        stdin: request.stdin,
        input: request.input,
        onExit: record.cgroupCpuAtBoot === undefined ? (seconds) => cpuCredit(paths(id).cpu, seconds) : undefined
      },
      onOutput
    ).pipe(
      // nsenter answers 1 when the sandbox vanished under it: that is the machine stopping.
      Effect.flatMap((exit) =>
        exit.exitCode !== 0 && stoppedMeanwhile()
          ? Effect.fail(new NotRunning({ machineId: id }))
          : Effect.succeed(exit)
      )
    )
  }

  /**
   * Brings the running machine's network to `enabled`: the wish is recorded in run.json first (so
   * a new svc converges to it, and a re-applied operation finds it), then net.sh acts, then the
   * state is observed. A boot by an older svc is left alone: its namespace may be the host's.
   */
  const setNetwork = (id: string, record: RunRecord, enabled: boolean, reloadRules = false) =>
    netLock(id).withPermits(1)(Effect.gen(function*() {
      const net = netOf(id)
      if (record.internet === undefined || record.netns === undefined) {
        const has = sharesHostNetwork(record.pid)
        if (has === enabled) return
        return yield* new DriverError({
          message:
            `machine ${id} was booted by an earlier svc without a network of its own: restart it to change its internet access`
        })
      }
      const observed = () => enabled ? Network.attached(net, record.pid) : Network.detached(net, record.pid)
      if (record.internet === enabled && observed() && !(enabled && reloadRules)) return
      if (record.internet !== enabled) {
        const updated: RunRecord = { ...record, internet: enabled }
        yield* attempt("network", () => writeAtomic(paths(id).run, JSON.stringify(updated)))
        booted.set(id, updated)
      }
      let gone = () => true
      if (enabled) {
        yield* attempt("network", () => Network.writeFiles(net, network))
        yield* Network.attach(tools, network, net, record.pid, record.netns)
      } else {
        gone = yield* attempt("network", () => Network.killSlirp(net))
      }
      if (!(yield* waitFor(() => gone() && observed(), 2_000))) {
        return yield* new DriverError({
          message: `machine ${id}: internet access ${enabled ? "on" : "off"} not observed`
        })
      }
    }))

  /** One network change at a time per machine: the start-up sweep may meet a re-applied operation. */
  const netLocks = new Map<string, Effect.Semaphore>()
  const netLock = (id: string) => {
    let lock = netLocks.get(id)
    if (lock === undefined) netLocks.set(id, lock = Effect.unsafeMakeSemaphore(1))
    return lock
  }

  /**
   * At svc's start: every running machine gets the network its run record asks for (an internet
   * path that died while svc was away is rebuilt), and the slirp4netns of machines that ended
   * meanwhile are ended.
   */
  const machineIds = attempt("network", () => {
    try {
      return NodeFs.readdirSync(NodePath.join(options.dataDir, "machines"))
    } catch {
      return []
    }
  })

  const reconcileNetworks = Effect.gen(function*() {
    // A machine that boots meanwhile (an operation resumed) may be starting its slirp4netns.
    const began = yield* attempt("network", Network.ticksNow)
    const ids = yield* machineIds
    for (const id of ids) {
      const record = yield* attempt("network", () => running(id))
      if (record === undefined) yield* attempt("network", () => Network.killSlirp(netOf(id), began))
      else if (record.internet !== undefined) yield* setNetwork(id, record, record.internet)
    }
  })

  /**
   * When the host's addresses changed (an interface came up, an address was added), the rules of
   * every running machine with internet access are written anew, so that the host stays closed on
   * its new addresses too. The layer runs it every 10 seconds; each machine's failure is logged.
   */
  let hostAddresses = Network.hostAddresses().join(" ")
  const refreshNetworks = Effect.gen(function*() {
    const now = Network.hostAddresses().join(" ")
    if (now === hostAddresses) return
    hostAddresses = now
    for (const id of yield* machineIds) {
      const record = yield* attempt("network", () => running(id))
      if (record?.internet !== true) continue
      yield* setNetwork(id, record, true, true).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning(`machine ${id}: its rules for the host's new addresses: ${error.message}`)
        )
      )
    }
  }).pipe(Effect.catchAll((error) => Effect.logWarning(`machine networks: ${error.message}`)))

  const stop: MachineDriverShape["stop"] = (id, { force }) =>
    Effect.gen(function*() {
      const machine = paths(id)
      // The launcher ends with the machine; its entry goes now (destroy stops first, so it goes too).
      launchers.delete(id)
      booted.delete(id)
      const record = yield* attempt("stop", () => running(id))
      if (record !== undefined) {
        const fold = attempt("stop", () => cpuFold(machine.cpu, record.bootId, bootCpu(record)))
        yield* fold
        if (!force) {
          // Everything but pid 1 and the machine's first process (pid 2, which ignores SIGTERM).
          const others = () => processesOf(record).filter((pid) => pid !== record.pid && innermostPid(pid) !== 2)
          for (const pid of others()) killPid(pid, "SIGTERM")
          yield* waitFor(() => others().length === 0, graceMs)
          yield* fold
        }
        // Killing pid 1 of a pid namespace kills every process in it.
        killPid(record.pid, "SIGKILL")
        const gone = yield* waitFor(() => !isAlive(record.pid, record.starttime), graceMs)
        if (!gone) return yield* new DriverError({ message: `stop: the sandbox of machine ${id} did not end` })
      }
      // The internet path holds the namespace, not the machine: it ends here (also one left by a
      // crash), once a network change under way (the start-up sweep's) is done.
      yield* netLock(id).withPermits(1)(
        Effect.flatMap(attempt("stop", () => Network.killSlirp(netOf(id))), (gone) => waitFor(gone, graceMs))
      )
      const groups = (yield* attempt("stop", () => readJson<RunRecord>(machine.run)))?.groups ?? cgroups.groupsOf(id)
      yield* waitFor(() => Cgroups.remove(groups), 1_000)
      yield* attempt("stop", () => NodeFs.rmSync(machine.run, { force: true }))
    })

  /**
   * Pauses the whole machine through its cgroup freezer (nested pid namespaces too: Freezer.ts);
   * a boot without one (no cgroups here, or booted by an older svc) by SIGSTOP to every process of
   * its pid namespace but pid 1 (bubblewrap's init, which writes nothing).
   */
  const freeze = (id: string) =>
    Effect.suspend(() => {
      const freezer = Freezer.freezerOf(running(id)?.groups)
      return freezer === undefined ? signalFreeze(id) : Freezer.freeze(freezer)
    })
  const signalFreeze = freezeWith((id) => {
    const record = running(id)
    return record === undefined ? [] : processesOf(record).filter((pid) => pid !== record.pid)
  })
  /** Resumes the machine, and its file system if a copy killed meanwhile left it frozen. */
  const thaw = (id: string) =>
    Effect.suspend(() => {
      const freezer = Freezer.freezerOf(running(id)?.groups)
      return Effect.zipRight(
        Disk.thawFileSystem(paths(id)),
        freezer === undefined ? signalThaw(id) : Freezer.thaw(freezer)
      )
    })
  const signalThaw = thawWith((id) => {
    const record = running(id)
    return record === undefined ? [] : processesOf(record)
  })

  const shape: MachineDriverShape = {
    name: "sandbox",
    isolates: true,
    toolsPath: options.agentsDir === undefined ? undefined : toolsMount,
    create: (spec) =>
      withKnownImage(
        spec,
        Effect.suspend(() =>
          // A machine from before disk images keeps its folder while it runs; its next start moves it.
          !Disk.hasImage(paths(spec.id)) && running(spec.id) !== undefined
            ? attempt("create", () => ensureDisk(paths(spec.id)))
            : Disk.ensure(options.dataDir, paths(spec.id), sizes[spec.size].disk_mib)
        )
      ),
    start: (spec) =>
      Effect.gen(function*() {
        const current = yield* attempt("start", () => running(spec.id))
        if (current !== undefined) {
          // A repeated start (or create) of a running machine also converges its network.
          yield* setNetwork(spec.id, current, spec.internetAccess)
          return { bootId: current.bootId }
        }
        yield* withKnownImage(spec, Effect.void)
        const machine = paths(spec.id)
        if (!NodeFs.existsSync(machine.disk) && !Disk.hasImage(machine)) {
          return yield* new DriverError({ message: `machine ${spec.id} has no disk` })
        }
        yield* Disk.ensure(options.dataDir, machine, sizes[spec.size].disk_mib)
        yield* attempt("start", () => {
          // A record left by a boot that ended without a stop (a crash, a host reboot).
          const stale = readJson<RunRecord>(machine.run)
          if (stale?.groups !== undefined) Cgroups.remove(stale.groups)
          NodeFs.rmSync(machine.run, { force: true })
          Network.killSlirp(netOf(spec.id))
          Network.writeFiles(netOf(spec.id), network)
        })
        const groups = cgroups.enforced ? cgroups.prepare(spec.id, sizes[spec.size]) : []
        if (groups === undefined) {
          // Its size could not be enforced: it does not run (a retry of the operation tries again).
          warnOnce(`cgroups: cannot create the groups of machine ${spec.id}`)
          return yield* new DriverError({ message: `cannot create the cgroups of machine ${spec.id}` })
        }
        const record = yield* boot(spec, groups)
        return { bootId: record.bootId }
      }),
    stop,
    // The disk is unmounted (its loop device freed) before its folder goes.
    destroy: (id) =>
      Effect.tap(
        destroyWith(options.dataDir, (id, how) => Effect.zipRight(stop(id, how), Disk.unmount(paths(id))))(id),
        () => attempt("destroy", () => UidRanges.release(options.dataDir, id))
      ),
    observe: observeWith(options.dataDir, running),
    setInternetAccess: (id, enabled) =>
      Effect.flatMap(
        attempt("network", () => running(id)),
        (record) => record === undefined ? Effect.void : setNetwork(id, record, enabled)
      ),
    exec: (id, request, onOutput) =>
      Effect.suspend((): Effect.Effect<{ readonly exitCode: number }, DriverError | NotRunning> => {
        const impossible = impossibleExec(request, id)
        if (impossible !== undefined) return Effect.fail(impossible)
        const record = running(id)
        if (record === undefined) return Effect.fail(new NotRunning({ machineId: id }))
        const cwd = NodePath.posix.resolve(machineHome, request.cwd ?? ".")
        const env = { PATH: machinePath, HOME: machineHome, ...record.env, ...request.env }
        // A command that ends with a failure of the way in (nsenter's 1, the launcher's end) while
        // the machine is gone ended because the machine stopped.
        const stoppedMeanwhile = () => running(id) === undefined
        if (tools.perl === undefined) {
          if (request.terminal !== undefined) return Effect.fail(noTerminals(id))
          return enterAndRun(id, record, { ...request, cwd, env }, onOutput, stoppedMeanwhile)
        }
        return launcherOf(id, record, tools.perl).run({ ...request, cwd, env }, onOutput).pipe(
          Effect.catchTag("LauncherGone", (gone) =>
            // A stop kills the launcher a moment before the machine's pid 1 is gone.
            Effect.flatMap(
              waitFor(stoppedMeanwhile, launcherGraceMs),
              (stopped): Effect.Effect<never, DriverError | NotRunning> =>
                stopped
                  ? Effect.fail(new NotRunning({ machineId: id }))
                  : Effect.fail(new DriverError({ message: `exec in machine ${id}: ${gone.reason}` }))
            ))
        )
      }),
    connectPort: (id, port) =>
      Effect.suspend((): Effect.Effect<NodeStream.Duplex, DriverError | NotRunning> => {
        const record = running(id)
        if (record === undefined) return Effect.fail(new NotRunning({ machineId: id }))
        if (!sharesHostNetwork(record.pid)) {
          return Effect.succeed(connectThroughNamespace(tools.nsenter, record.pid, port))
        }
        // A boot by an earlier svc that shares the host's network: only a port that a process of
        // this machine listens on.
        if (!servedBy(port, processesOf(record))) {
          return Effect.fail(new DriverError({ message: `no process of machine ${id} listens on port ${port}` }))
        }
        return Effect.succeed(connectLocal(port))
      }),
    diskPath: (id) => paths(id).disk,
    freeze,
    thaw,
    copyDisk: (sourceId, targetId) =>
      Effect.suspend(() => {
        const source = paths(sourceId)
        // A machine from before disk images, still running: its tree is copied by the caller.
        if (!Disk.hasImage(source)) return Effect.succeed(undefined)
        const copy = Disk.copyImage(source, Disk.imageOf(paths(targetId)))
        return running(sourceId) === undefined
          ? copy
          : Effect.acquireUseRelease(freeze(sourceId), () => copy, () => Effect.ignore(thaw(sourceId)))
      }),
    cpuSeconds: (id) =>
      attempt("cpu", () => {
        const record = running(id)
        return cpuTotal(
          paths(id).cpu,
          record === undefined ? undefined : { bootId: record.bootId, seconds: bootCpu(record) }
        )
      })
  }
  const thawFrozen = Effect.gen(function*() {
    for (const id of yield* machineIds) {
      const freezer = Freezer.freezerOf(running(id)?.groups)
      if (freezer !== undefined) yield* Effect.ignore(Freezer.thaw(freezer))
    }
  })
  return Object.assign(shape, { reconcileNetworks, refreshNetworks, thawFrozen })
}

/** Finds bwrap and nsenter, and checks that bwrap can make namespaces here; one clear line if not. */
export const checkTools = attempt("sandbox driver", (): Tools => {
  const bwrap = which("bwrap")
  if (bwrap === undefined) {
    throw new Error(
      "bwrap not found: install bubblewrap (Debian package `bubblewrap`), or set SVC_RUNTIME=process (no isolation)"
    )
  }
  const nsenter = which("nsenter")
  if (nsenter === undefined) throw new Error("nsenter not found: install util-linux")
  const perl = which("perl")
  const unshare = which("unshare")
  if (unshare === undefined) throw new Error("unshare not found: install util-linux")
  const ip = which("ip")
  if (ip === undefined) throw new Error("ip not found: install iproute2 (machines' network namespaces need it)")
  // Machines have internet access unless asked otherwise: without its path no default create boots.
  const slirp4netns = which("slirp4netns")
  const nft = which("nft")
  if (slirp4netns === undefined || nft === undefined) {
    throw new Error(
      "slirp4netns or nft not found: install slirp4netns and nftables (machines' internet access needs them)"
    )
  }
  // Each machine's network namespace is made by svc, outside the machine's user namespace.
  const netProbe = NodeChild.spawnSync(unshare, ["--net", "--", ip, "link", "set", "lo", "up"], { encoding: "utf8" })
  if (netProbe.status !== 0) {
    throw new Error(
      `svc cannot make network namespaces here (run svc as root): ${
        (netProbe.stderr ?? "").trim() || String(netProbe.error)
      }`
    )
  }
  const probe = NodeChild.spawnSync(bwrap, ["--unshare-all", "--ro-bind", "/", "/", "true"], { encoding: "utf8" })
  if (probe.status !== 0) {
    throw new Error(
      `bwrap cannot create namespaces here (run svc as root or allow user namespaces): ${
        (probe.stderr ?? "").trim() || String(probe.error)
      }`
    )
  }
  return {
    bwrap,
    nsenter,
    unshare,
    ip,
    slirp4netns,
    nft,
    perl: perl?.startsWith("/usr/") ? perl : undefined
  }
})

export const layer = (options: {
  readonly dataDir: string
  readonly agentsDir?: string | undefined
  /** false: no cgroups even where the host allows them (no limits; CPU time from /proc). */
  readonly cgroups?: boolean | undefined
  /** false: svc spawns bwrap and every exec enters the machine with nsenter, as on a host without Perl. */
  readonly launcher?: boolean | undefined
  /** What machines with internet access may reach besides the internet (`SVC_MACHINE_LAN`, ...). */
  readonly network?: Network.NetworkSettings | undefined
  /** The limits of each size (`SVC_SIZES`). */
  readonly sizes?: SizeTable | undefined
}) =>
  Layer.scoped(
    MachineDriver,
    Effect.gen(function*() {
      const found = yield* checkTools
      const tools = options.launcher === false ? { ...found, perl: undefined } : found
      yield* attempt("sandbox driver", () => {
        const why = Disk.unusable()
        if (why !== undefined) throw new Error(why)
      })
      const cgroups = options.cgroups === false ? Cgroups.none : Cgroups.detect()
      // A host that cannot isolate machines or enforce their sizes runs none (IsolationCheck.ts).
      const missing = missingIsolation({
        perl: found.perl,
        dataDir: options.dataDir,
        cgroups: options.cgroups === false ? undefined : cgroups
      })
      if (missing !== undefined) return yield* new DriverError({ message: missing })
      const runtime = yield* Effect.runtime<never>()
      let warned = false
      const warnOnce = (message: string) => {
        if (warned) return
        warned = true
        Runtime.runFork(runtime)(Effect.logWarning(message))
      }
      // With Perl, the spawner starts the sandboxes (Spawner.ts) and isolates them; it ends with the layer.
      const spawner = found.perl === undefined ? inProcess : hostSpawner(found.perl)
      yield* Effect.addFinalizer(() => Effect.sync(spawner.close))
      const driver = make({
        dataDir: options.dataDir,
        cgroups,
        tools,
        agentsDir: options.agentsDir,
        spawner,
        network: options.network,
        sizes: options.sizes,
        isolated: true
      }, warnOnce)
      // Disks stay mounted while svc is away; after a host reboot they are mounted again here.
      yield* Disk.mountAll(options.dataDir)
      // A fork that svc's end cut short leaves its source frozen: every running machine is thawed.
      yield* driver.thawFrozen.pipe(Effect.catchAll((error) => Effect.logWarning(`thawing machines: ${error.message}`)))
      // Adopted machines keep their network; a path that died while svc was away is rebuilt.
      // Interruptible whatever builds the layer (a finalizer does, in destroyMachines): the layer's
      // end interrupts them, and an uninterruptible repeat would keep it from ending.
      yield* Effect.forkScoped(Effect.interruptible(
        driver.reconcileNetworks.pipe(
          Effect.catchAll((error) => Effect.logWarning(`machine networks: ${error.message}`))
        )
      ))
      // The host's addresses change in real time, not on the service's Clock: polled on the live
      // clock, so a test that moves a TestClock by days does not run thousands of refreshes.
      yield* Effect.forkScoped(
        Effect.interruptible(Effect.repeat(driver.refreshNetworks, Schedule.spaced("10 seconds"))).pipe(
          Effect.withClock(Clock.make())
        )
      )
      return driver
    })
  )
