/**
 * Host process plumbing shared by the drivers: running a command in its own process group with
 * its output streamed in order, signalling, and reading /proc (start times, CPU times, pid
 * namespaces, the host's boot id). All of it is small synchronous reads of /proc and one spawn per
 * command: cheap enough for exec, which runs at a high rate.
 */
import { Effect, Fiber, Queue } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import { DriverError, type OutputStream, type TerminalInput } from "./MachineDriver.js"

/**
 * The PATH for what svc runs on the host: the inherited one, else systemd's default (sbin included:
 * nft and ip live there), so svc started with an empty environment still finds its tools.
 */
export const hostPath = process.env.PATH ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ---------------------------------------------------------------------------------------------
// running one command

type Event =
  | { readonly _tag: "output"; readonly stream: OutputStream; readonly chunk: Uint8Array }
  | { readonly _tag: "exit"; readonly exitCode: number }
  | { readonly _tag: "error"; readonly error: Error }

/** After the command exits, how long its pipes may stay open before svc stops reading them. */
const drainMillis = 25

/** How long an interrupted command may take to be reaped after its group got SIGKILL. */
export const reapMillis = 2_000

export interface CommandOptions {
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly stdin?: Uint8Array | undefined
  /** A live stdin: chunks written as they are taken; stdin closes when the queue shuts down. */
  /** A live stdin; sizes (a terminal's) are no pipe's business and are dropped. */
  readonly input?: Queue.Dequeue<TerminalInput> | undefined
  /** Called with the command's pid right after the spawn (e.g. to move it into a cgroup). */
  readonly onSpawn?: ((pid: number) => void) | undefined
  /**
   * Called once the command exited, with the CPU seconds it and the children it waited for used
   * (see `takeReapedCpuSeconds`).
   */
  readonly onExit?: ((cpuSeconds: number) => void) | undefined
}

/**
 * Runs `argv` in a new process group and answers its exit code once it exits, not once its pipes
 * close: a background process it started may hold them and keep running. Output reaches
 * `onOutput` in order. A signal death answers 128 + the signal's number; a command that cannot be
 * started answers 127 (not found) or 126 (not executable) with a line on stderr, as a shell does.
 * Interrupting kills the whole process group with SIGKILL and waits until the command is reaped.
 */
export const runCommand = (
  argv: ReadonlyArray<string>,
  options: CommandOptions,
  onOutput: (stream: OutputStream, chunk: Uint8Array) => Effect.Effect<void>
): Effect.Effect<{ readonly exitCode: number }, DriverError> =>
  Effect.gen(function*() {
    const events = yield* Queue.unbounded<Event>()
    const child = yield* Effect.try({
      try: () =>
        NodeChild.spawn(argv[0]!, argv.slice(1), {
          cwd: options.cwd,
          env: options.env,
          detached: true,
          stdio: [options.stdin === undefined && options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"]
        }),
      catch: (cause) => new DriverError({ message: `cannot spawn ${argv[0]}`, cause })
    })
    if (child.pid !== undefined) options.onSpawn?.(child.pid)
    const offer = (event: Event) => void Queue.unsafeOffer(events, event)
    let reaped = false
    const whenReaped: Array<() => void> = []
    child.stdout!.on("data", (chunk: Buffer) => offer({ _tag: "output", stream: "stdout", chunk }))
    child.stderr!.on("data", (chunk: Buffer) => offer({ _tag: "output", stream: "stderr", chunk }))
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return // a failed kill or pipe of a running command: its exit follows
      const code = error.code === "ENOENT" ? 127 : error.code === "EACCES" ? 126 : undefined
      if (code === undefined) return offer({ _tag: "error", error })
      const what = NodeFs.existsSync(options.cwd) ? argv[0] : options.cwd
      const reason = code === 127 ? "No such file or directory" : "Permission denied"
      offer({ _tag: "output", stream: "stderr", chunk: Buffer.from(`svc: ${what}: ${reason}\n`) })
      offer({ _tag: "exit", exitCode: code })
    })
    child.on("exit", (code, signal) => {
      const cpuSeconds = takeReapedCpuSeconds()
      reaped = true
      for (const resume of whenReaped) resume()
      options.onExit?.(cpuSeconds)
      const exitCode = code ?? 128 + (signal === null ? 0 : NodeOs.constants.signals[signal] ?? 0)
      // Output written just before the exit may still be in the pipes: read until they close, or
      // for a moment when a background process keeps them open.
      let open = 2
      const finish = () => {
        clearTimeout(timer)
        child.stdout!.destroy()
        child.stderr!.destroy()
        offer({ _tag: "exit", exitCode })
      }
      const timer = setTimeout(finish, drainMillis)
      const closed = () => --open === 0 && finish()
      for (const stream of [child.stdout!, child.stderr!]) {
        if (stream.readableEnded || stream.destroyed) closed()
        else stream.once("end", closed)
      }
    })
    if (options.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => undefined) // the command may exit without reading it
      child.stdin.end(options.stdin)
    }
    const input = options.input
    const writer = input === undefined || !child.stdin ? undefined : yield* Effect.forkDaemon(
      Effect.forever(Effect.flatMap(Queue.take(input), (chunk) =>
        Effect.sync(() =>
          chunk instanceof Uint8Array && child.stdin!.write(chunk)
        ))).pipe(
          Effect.onInterrupt(() =>
            Effect.sync(() => child.stdin!.end())
          )
        )
    )
    if (writer !== undefined) child.stdin!.on("error", () => undefined) // the command may exit without reading it
    return yield* Effect.gen(function*() {
      while (true) {
        const event = yield* Queue.take(events)
        switch (event._tag) {
          case "output":
            yield* onOutput(event.stream, event.chunk)
            break
          case "exit":
            return { exitCode: event.exitCode }
          case "error":
            return yield* new DriverError({ message: `command failed to start: ${event.error.message}` })
        }
      }
    }).pipe(
      Effect.ensuring(writer === undefined ? Effect.void : Fiber.interruptFork(writer)),
      Effect.onInterrupt(() =>
        Effect.async<void>((resume) => {
          const pid = child.pid
          if (reaped || pid === undefined) return resume(Effect.void)
          const end = () => {
            clearTimeout(timer)
            killGroup(pid, "SIGKILL") // what is left of the group: its background processes
            resume(Effect.void)
          }
          const timer = setTimeout(end, reapMillis)
          whenReaped.push(end)
          child.stdin?.destroy()
          // The command's children first, so that it reaps them itself. A child whose parent is
          // outside its pid namespace (nsenter's) would otherwise go to the host's init, and its
          // namespace could not end before that init reaped it.
          const children = childrenOf(pid)
          if (children.length === 0) return killGroup(pid, "SIGKILL")
          for (const grandchild of children) killPid(grandchild, "SIGKILL")
          setTimeout(() => reaped || killGroup(pid, "SIGKILL"), 100).unref()
        })
      )
    )
  })

// ---------------------------------------------------------------------------------------------
// signals

/** Signals a whole process group; a group that is gone already is fine. */
export const killGroup = (pgid: number | undefined, signal: NodeJS.Signals) => {
  if (pgid === undefined || pgid <= 1) return
  try {
    process.kill(-pgid, signal)
  } catch {
    // already gone
  }
}

/** Signals one process; answers false when it is gone. */
export const killPid = (pid: number, signal: NodeJS.Signals) => {
  if (pid <= 1) return false
  try {
    process.kill(pid, signal)
    return true
  } catch {
    return false
  }
}

/** Sleeps in real time, not on the Clock: the host's processes do not run on a TestClock. */
export const realSleep = (millis: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), millis)
    return Effect.sync(() => clearTimeout(timer))
  })

/**
 * Checks `done` every 20 ms of real time until it holds or `ms` passed; answers whether it came true.
 */
export const waitFor = (done: () => boolean, ms: number): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const deadline = Date.now() + ms
    const loop: Effect.Effect<boolean> = Effect.suspend(() =>
      done()
        ? Effect.succeed(true)
        : Date.now() >= deadline
        ? Effect.succeed(false)
        : Effect.zipRight(realSleep(20), loop)
    )
    return loop
  })

// ---------------------------------------------------------------------------------------------
// /proc

export interface ProcStat {
  /** Field 3: R, S, D, Z (zombie), ... */
  readonly state: string
  /** Field 22: start time in clock ticks after the host booted; with the boot id it names a process. */
  readonly starttime: number
  /** utime + stime + cutime + cstime (fields 14-17), in seconds. */
  readonly cpuSeconds: number
}

/** USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux architecture svc runs on. */
export const clockTicks = 100

/** /proc/<pid>/stat, or undefined when the process is gone. The name may hold spaces: parse after ")". */
export const procStat = (pid: number): ProcStat | undefined => {
  try {
    const text = NodeFs.readFileSync(`/proc/${pid}/stat`, "latin1")
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    // fields[0] is field 3 (state); field N is fields[N - 3].
    const ticks = (n: number) => Number(fields[n - 3])
    return {
      state: fields[0] ?? "?",
      starttime: ticks(22),
      cpuSeconds: (ticks(14) + ticks(15) + ticks(16) + ticks(17)) / clockTicks
    }
  } catch {
    return undefined
  }
}

/** Resident memory of `pid` (VmRSS of /proc/<pid>/status, in kB whatever the page size), 0 when gone. */
export const residentBytes = (pid: number) => {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(NodeFs.readFileSync(`/proc/${pid}/status`, "latin1"))?.[1]
    return kb === undefined ? 0 : Number(kb) * 1024
  } catch {
    return 0
  }
}

/** The process `pid` that started at `starttime` runs (a reused pid or a zombie does not). */
export const isAlive = (pid: number, starttime: number) => {
  const stat = procStat(pid)
  return stat !== undefined && stat.starttime === starttime && stat.state !== "Z" && stat.state !== "X"
}

let bootId: string | undefined
/** The host's boot id: a pid and start time name a process only within one boot. */
export const hostBootId = () => (bootId ??= NodeFs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim())

/** The pids of the host, read from /proc. */
export const allPids = () => {
  const pids: Array<number> = []
  for (const name of NodeFs.readdirSync("/proc")) {
    const first = name.charCodeAt(0)
    if (first >= 48 && first <= 57) pids.push(Number(name))
  }
  return pids
}

/** `readlink /proc/<pid>/ns/pid` (`pid:[4026532181]`), or undefined when the process is gone. */
export const pidNamespace = (pid: number) => {
  try {
    return NodeFs.readlinkSync(`/proc/${pid}/ns/pid`)
  } catch {
    return undefined
  }
}

/** Host pids of every process in the pid namespace `namespace`. */
export const pidsInNamespace = (namespace: string) => allPids().filter((pid) => pidNamespace(pid) === namespace)

/** The pid of a process as its own (innermost) pid namespace sees it: the last `NSpid` field. */
export const innermostPid = (pid: number) => {
  try {
    const line = /^NSpid:(.*)$/m.exec(NodeFs.readFileSync(`/proc/${pid}/status`, "latin1"))?.[1]
    const last = line?.trim().split(/\s+/).pop()
    return last === undefined ? undefined : Number(last)
  } catch {
    return undefined
  }
}

/** The direct children of `pid` (of its main thread, which is the one that forks here). */
export const childrenOf = (pid: number) => {
  try {
    const text = NodeFs.readFileSync(`/proc/${pid}/task/${pid}/children`, "latin1").trim()
    return text === "" ? [] : text.split(" ").map(Number)
  } catch {
    return []
  }
}

/** Host pids of the processes whose environment holds the entry `name=value` exactly. */
export const pidsWithEnv = (name: string, value: string) => {
  const entry = Buffer.from(`\0${name}=${value}\0`)
  return allPids().filter((pid) => {
    if (pid === process.pid) return false
    try {
      const environ = NodeFs.readFileSync(`/proc/${pid}/environ`)
      return Buffer.concat([Buffer.of(0), environ, Buffer.of(0)]).includes(entry)
    } catch {
      return false
    }
  })
}

// ---------------------------------------------------------------------------------------------
// CPU of reaped children

/** utime + stime of the children svc has reaped (fields 16-17 of /proc/self/stat), in ticks. */
const reapedTicks = () => {
  try {
    const text = NodeFs.readFileSync(`/proc/self/stat`, "latin1")
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return Number(fields[16 - 3]) + Number(fields[17 - 3])
  } catch {
    return 0
  }
}

let reapedBaseline = reapedTicks()

/**
 * CPU seconds svc gained by reaping children since the last call. Node reaps a child just before
 * it emits `exit`, so called from that handler it measures the command and every process it
 * waited for. Best effort: children reaped in the same turn of the event loop are counted
 * together by the first handler, and children spawned by other parts of svc count for the next.
 */
export const takeReapedCpuSeconds = () => {
  const now = reapedTicks()
  const delta = now - reapedBaseline
  reapedBaseline = now
  return delta > 0 ? delta / clockTicks : 0
}
