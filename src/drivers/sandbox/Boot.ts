/**
 * A machine's boot (SandboxDriver.ts `start`): its network namespace, its isolation and bwrap,
 * started through the spawner; answers the run record once the machine's first process runs.
 */
import { Effect } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { hostBootId, killPid, procStat } from "../HostProcess.js"
import { DriverError, type MachineSpec } from "../MachineDriver.js"
import { type MachinePaths, writeAtomic } from "../MachineFiles.js"
import { bwrapArgs, hostnameOf, machineHome, machinePath } from "./Bwrap.js"
import * as Cgroups from "./Cgroups.js"
import { isolationOf } from "./Isolation.js"
import * as Network from "./Network.js"
import type { RunRecord } from "./RunRecord.js"
import type { Spawner } from "./Spawner.js"
import type { Tools } from "./Tools.js"

const bootTimeoutMs = 10_000

export interface BootContext {
  readonly dataDir: string
  readonly agentsDir: string | undefined
  readonly isolated: boolean | undefined
  readonly tools: Tools
  readonly network: Network.NetworkSettings
  readonly resolvTarget: string
  readonly spawner: Spawner
  readonly paths: (id: string) => MachinePaths
  readonly netOf: (id: string) => Network.NetPaths
  /** Called with the record once it is written. */
  readonly booted: (id: string, record: RunRecord) => void
}

/** Boots machine `spec` in `groups`. */
export const bootMachine = (context: BootContext) => (spec: MachineSpec, groups: Cgroups.Groups) =>
  Effect.async<RunRecord, DriverError>((resume) => {
    const { network, paths, netOf, resolvTarget, spawner, tools } = context
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
      context.booted(spec.id, record)
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
        toolsDir: context.agentsDir,
        infoFd: 3,
        readyFd: 4,
        isolated: context.isolated
      })
    ])
    if (typeof command === "string") return finish(Effect.fail(new DriverError({ message: command })))
    let isolation
    try {
      isolation = context.isolated === true
        ? isolationOf({
          dataDir: context.dataDir,
          id: spec.id,
          diskDir: machine.disk,
          toolsDir: context.agentsDir,
          resolvConf: net.resolvConf
        })
        : undefined
    } catch (cause) {
      return finish(Effect.fail(new DriverError({ message: "cannot prepare the machine's isolation", cause })))
    }
    if (isolation !== undefined) Cgroups.delegate(groups, isolation.uidBase)
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
