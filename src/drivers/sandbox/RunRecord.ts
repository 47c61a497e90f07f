/**
 * A machine's boot record, `run.json` (SandboxDriver.ts): which process is its sandbox, and what
 * it was booted with. Any svc process that reads it adopts the machine.
 */
import { hostBootId, isAlive, pidNamespace, pidsInNamespace, procStat } from "../HostProcess.js"
import { readJson } from "../MachineFiles.js"
import * as Cgroups from "./Cgroups.js"

export interface RunRecord {
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

/** The run records of one data dir's machines, and what is read through them. */
export const runRecords = (runFile: (id: string) => string) => {
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
    const record = readJson<RunRecord>(runFile(id))
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

  return { booted, running, processesOf, bootCpu }
}

export type RunRecords = ReturnType<typeof runRecords>
