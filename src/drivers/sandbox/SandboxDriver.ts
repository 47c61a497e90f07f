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
 *
 * Its parts, each in a file: the boot (Boot.ts), the run record (RunRecord.ts), exec and the
 * launcher (Exec.ts), networks of running machines (MachineNetworks.ts), disks (DiskCalls.ts) and
 * the host programs it needs (Tools.ts).
 */
import { Clock, Effect, Layer, Runtime, Schedule } from "effect"
import * as NodeFs from "node:fs"
import type * as NodeStream from "node:stream"
import { defaultSizes, type SizeTable } from "../../kernel/config/MachineSizes.js"
import { innermostPid, isAlive, killPid, residentBytes, waitFor } from "../HostProcess.js"
import { DriverError, MachineDriver, type MachineDriverShape, NotRunning, withKnownImage } from "../MachineDriver.js"
import { attempt, cpuFold, cpuTotal, machinePaths, observeWith, readJson } from "../MachineFiles.js"
import { connectLocal, connectThroughNamespace, servedBy, sharesHostNetwork } from "../PortConnections.js"
import { bootMachine } from "./Boot.js"
import { toolsMount } from "./Bwrap.js"
import * as Cgroups from "./Cgroups.js"
import { groupUsage } from "./CgroupUsage.js"
import * as Disk from "./Disk.js"
import { diskCalls } from "./DiskCalls.js"
import { execIn } from "./Exec.js"
import { missingIsolation } from "./IsolationCheck.js"
import { machineNetworks } from "./MachineNetworks.js"
import * as Network from "./Network.js"
import { type RunRecord, runRecords } from "./RunRecord.js"
import { hostSpawner, inProcess, type Spawner } from "./Spawner.js"
import { checkTools, type Tools } from "./Tools.js"

export { checkTools, type Tools }

/** How long processes get after SIGTERM before the machine's pid 1 is killed. */
const graceMs = 5_000

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
  const records = runRecords((id) => paths(id).run)
  const { booted, bootCpu, processesOf, running } = records
  const boot = bootMachine({
    dataDir: options.dataDir,
    agentsDir: options.agentsDir,
    isolated: options.isolated,
    tools,
    network,
    resolvTarget,
    spawner,
    paths,
    netOf,
    booted: (id, record) => void booted.set(id, record)
  })
  const execs = execIn({ tools, isolated: options.isolated, paths, running })
  const { machineIds, netLock, reconcileNetworks, refreshNetworks, setNetwork } = machineNetworks({
    dataDir: options.dataDir,
    tools,
    network,
    paths,
    netOf,
    running,
    booted
  })

  const stop: MachineDriverShape["stop"] = (id, { force }) =>
    Effect.gen(function*() {
      const machine = paths(id)
      // The launcher ends with the machine; its entry goes now (destroy stops first, so it goes too).
      execs.forget(id)
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

  const disks = diskCalls({ dataDir: options.dataDir, sizes, paths, records, stop })

  const shape: MachineDriverShape = {
    name: "sandbox",
    isolates: true,
    toolsPath: options.agentsDir === undefined ? undefined : toolsMount,
    create: disks.create,
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
    destroy: disks.destroy,
    observe: observeWith(options.dataDir, running),
    setInternetAccess: (id, enabled) =>
      Effect.flatMap(
        attempt("network", () => running(id)),
        (record) => record === undefined ? Effect.void : setNetwork(id, record, enabled)
      ),
    exec: execs.exec,
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
    diskPath: disks.diskPath,
    freeze: disks.freeze,
    thaw: disks.thaw,
    copyDisk: disks.copyDisk,
    cpuSeconds: (id) =>
      attempt("cpu", () => {
        const record = running(id)
        return cpuTotal(
          paths(id).cpu,
          record === undefined ? undefined : { bootId: record.bootId, seconds: bootCpu(record) }
        )
      }),
    stats: (id) =>
      attempt("stats", () => {
        const record = running(id)
        const machine = paths(id)
        const cpuSeconds = cpuTotal(
          machine.cpu,
          record === undefined ? undefined : { bootId: record.bootId, seconds: bootCpu(record) }
        )
        const disk = Disk.usage(machine)
        const base = { cpuSeconds, diskUsedBytes: disk.usedBytes, diskSizeBytes: disk.sizeBytes }
        if (record === undefined) return { running: false, ...base }
        // Without groups (a host test's `cgroups: false`): its processes counted, nothing limited.
        const groups = record.groups ?? []
        const pids = groups.length > 0 ? [] : processesOf(record)
        const usage = groups.length > 0
          ? groupUsage(groups)
          : { processes: pids.length, memoryBytes: pids.reduce((sum, pid) => sum + residentBytes(pid), 0) }
        return { running: true, ...base, ...usage }
      })
  }
  const thawFrozen = Effect.flatMap(machineIds, disks.thawFrozen)
  return Object.assign(shape, { reconcileNetworks, refreshNetworks, thawFrozen })
}

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
