/**
 * What the drivers keep on disk for a machine, the same for every driver (docs/drivers.md):
 *
 *     <data dir>/machines/<id>/
 *       disk/{root,home,tmp,var/tmp,opt,srv,workspace}   the machine's files, kept across boots
 *       run.json                                         while it runs: what names the boot
 *       cpu.json                                         CPU seconds of what has ended
 *
 * and the CPU ledger that makes `cpuSeconds` monotonic across boots and restarts of svc.
 */
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { killPid, procStat, realSleep } from "./HostProcess.js"
import { DriverError, type MachineDriverShape, type Observed } from "./MachineDriver.js"

/** The writable folders of a machine's disk; the sandbox binds each at `/<folder>`. */
export const diskFolders = ["root", "home", "tmp", "var/tmp", "opt", "srv", "workspace"] as const

export interface MachinePaths {
  readonly machine: string
  readonly disk: string
  readonly run: string
  readonly cpu: string
}

export const machinePaths = (dataDir: string, id: string): MachinePaths => {
  if (id === "" || id.includes("/") || id === "." || id === "..") {
    throw new Error(`invalid machine id ${JSON.stringify(id)}`)
  }
  const machine = NodePath.join(dataDir, "machines", id)
  return {
    machine,
    disk: NodePath.join(machine, "disk"),
    run: NodePath.join(machine, "run.json"),
    cpu: NodePath.join(machine, "cpu.json")
  }
}

/** mkdir -p of every disk folder: keeps whatever is there. */
export const ensureDisk = (paths: MachinePaths) => {
  for (const folder of diskFolders) NodeFs.mkdirSync(NodePath.join(paths.disk, folder), { recursive: true })
}

/**
 * `freeze` and `thaw` for every driver, over its list of the machine's processes: SIGSTOP until
 * every one is stopped (a process forked meanwhile is caught by the next round), SIGCONT to resume.
 */
/**
 * Whether `pid` waits in vfork for its child to exec (a shell starting a command): it shows as `D`
 * and takes no signal until then, and runs nothing before its child does, which the same rounds
 * stop. Without this, a child stopped between its vfork and its exec left freeze waiting for good.
 */
const inVfork = (pid: number) => {
  try {
    return /fork|clone/.test(NodeFs.readFileSync(`/proc/${pid}/wchan`, "utf8"))
  } catch {
    return false
  }
}

export const freezeWith = (processesOf: (id: string) => ReadonlyArray<number>): MachineDriverShape["freeze"] => (id) =>
  Effect.gen(function*() {
    // A process in uninterruptible sleep (disk I/O) stops only once it leaves it: on a busy host
    // that can take a while, so the bound is generous (rounds are 2 ms of real time apart: the
    // machine does not run on the Clock).
    for (let round = 0; round < 1_000; round++) {
      const running = processesOf(id).filter((pid) => {
        const state = procStat(pid)?.state
        if (state === "D" && inVfork(pid)) return false
        return state !== undefined && state !== "T" && state !== "t" && state !== "Z" && state !== "X"
      })
      if (running.length === 0) return
      for (const pid of running) killPid(pid, "SIGSTOP")
      yield* realSleep(2)
    }
    const left = processesOf(id).map((pid) => `${pid} (${procStat(pid)?.state ?? "gone"})`).join(", ")
    return yield* new DriverError({ message: `freeze: the processes of machine ${id} did not all stop: ${left}` })
  })

export const thawWith = (processesOf: (id: string) => ReadonlyArray<number>): MachineDriverShape["thaw"] => (id) =>
  attempt("thaw", () => {
    for (const pid of processesOf(id)) killPid(pid, "SIGCONT")
  })

/** Writes a file atomically (temporary name, then rename), so a crash never leaves half of it. */
export const writeAtomic = (path: string, text: string) => {
  const temporary = `${path}.${process.pid}.tmp`
  NodeFs.writeFileSync(temporary, text, { mode: 0o600 })
  NodeFs.renameSync(temporary, path)
}

export const readJson = <A>(path: string): A | undefined => {
  try {
    return JSON.parse(NodeFs.readFileSync(path, "utf8")) as A
  } catch {
    return undefined
  }
}

// ---------------------------------------------------------------------------------------------
// CPU ledger

/**
 * `cpu.json`: `seconds` is the CPU time of everything that has ended (earlier boots, commands
 * that exited). `folded` remembers the boot whose time a stop added last, so that a stop repeated
 * for the same boot (after a crash between recording and killing) adds only the difference.
 */
interface Ledger {
  readonly seconds: number
  readonly folded?: { readonly bootId: string; readonly seconds: number } | undefined
}

const readLedger = (path: string): Ledger => readJson<Ledger>(path) ?? { seconds: 0 }

/** What the current boot's sample adds on top of the ledger. */
const unfolded = (ledger: Ledger, bootId: string, sample: number) =>
  ledger.folded?.bootId === bootId ? Math.max(0, sample - ledger.folded.seconds) : sample

/** The highest total answered per ledger file in this process: the answer never goes down. */
const answered = new Map<string, number>()

/**
 * The machine's CPU seconds: the ledger plus `boot`, the current boot's sample (its id and the
 * seconds counted so far), kept monotonic in this process (a sample may dip for a moment, e.g.
 * between a process's exit and its parent's wait).
 */
export const cpuTotal = (path: string, boot: { readonly bootId: string; readonly seconds: number } | undefined) => {
  const ledger = readLedger(path)
  const total = ledger.seconds + (boot === undefined ? 0 : unfolded(ledger, boot.bootId, boot.seconds))
  const answer = Math.max(total, answered.get(path) ?? 0)
  answered.set(path, answer)
  return answer
}

/** Adds the CPU time of something that ended (a command that exited). */
export const cpuCredit = (path: string, seconds: number) => {
  if (!(seconds > 0) || !NodeFs.existsSync(NodePath.dirname(path))) return
  const ledger = readLedger(path)
  writeAtomic(path, JSON.stringify({ ...ledger, seconds: ledger.seconds + seconds }))
}

/** Adds the final sample of a boot that is being stopped. */
export const cpuFold = (path: string, bootId: string, sample: number) => {
  const ledger = readLedger(path)
  const seconds = Math.max(ledger.seconds + unfolded(ledger, bootId, sample), answered.get(path) ?? 0)
  writeAtomic(path, JSON.stringify({ seconds, folded: { bootId, seconds: sample } }))
}

/** Forgets the in-process answers of a destroyed machine. */
export const cpuForget = (path: string) => void answered.delete(path)

/** A synchronous host action as an Effect failing with DriverError (the actor makes that `uncertain`). */
export const attempt = <A>(what: string, run: () => A) =>
  Effect.try({ try: run, catch: (cause) => new DriverError({ message: `${what}: ${String(cause)}`, cause }) })

/** `destroy` for every driver: a forced stop, then the machine's folder and its CPU ledger go. */
export const destroyWith = (dataDir: string, stop: MachineDriverShape["stop"]): MachineDriverShape["destroy"] => (id) =>
  Effect.zipRight(
    stop(id, { force: true }),
    attempt("destroy", () => {
      const paths = machinePaths(dataDir, id)
      NodeFs.rmSync(paths.machine, { recursive: true, force: true })
      cpuForget(paths.cpu)
    })
  )

/** `observe` for every driver, from its reading of the run record (undefined: not running). */
export const observeWith = (
  dataDir: string,
  running: (id: string) => { readonly bootId: string } | undefined
): MachineDriverShape["observe"] =>
(id) =>
  attempt("observe", (): Observed => {
    const record = running(id)
    return {
      exists: NodeFs.existsSync(machinePaths(dataDir, id).disk),
      running: record !== undefined,
      bootId: record?.bootId ?? null
    }
  })
