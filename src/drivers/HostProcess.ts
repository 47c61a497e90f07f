/**
 * Host process plumbing shared by the drivers: running a command in its own process group with
 * its output streamed in order, and reading /proc (start times, CPU times, the host's boot id).
 */
import { Effect, Queue } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import { DriverError, type OutputStream } from "./MachineDriver.js"

type Event =
  | { readonly _tag: "output"; readonly stream: OutputStream; readonly chunk: Uint8Array }
  | { readonly _tag: "exit"; readonly exitCode: number }
  | { readonly _tag: "error"; readonly error: Error }

/** After the command exits, how long its pipes may stay open before svc stops reading them. */
const drainMillis = 25

/**
 * Runs `argv` in a new process group and answers its exit code once it exits, not once its pipes
 * close: a background process it started may hold them and keep running. Output reaches
 * `onOutput` in order. Interrupting kills the whole process group with SIGKILL.
 */
export const runCommand = (
  argv: ReadonlyArray<string>,
  options: {
    readonly cwd: string
    readonly env: Readonly<Record<string, string>>
    readonly stdin?: Uint8Array | undefined
  },
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
          stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"]
        }),
      catch: (cause) => new DriverError({ message: `cannot spawn ${argv[0]}`, cause })
    })
    const offer = (event: Event) => void Queue.unsafeOffer(events, event)
    child.stdout!.on("data", (chunk: Buffer) => offer({ _tag: "output", stream: "stdout", chunk }))
    child.stderr!.on("data", (chunk: Buffer) => offer({ _tag: "output", stream: "stderr", chunk }))
    child.on("error", (error) => offer({ _tag: "error", error }))
    child.on("exit", (code, signal) => {
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
    if (options.stdin !== undefined) {
      child.stdin!.on("error", () => undefined) // the command may exit without reading it
      child.stdin!.end(options.stdin)
    }
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
    }).pipe(Effect.onInterrupt(() => Effect.sync(() => killGroup(child.pid, "SIGKILL"))))
  })

/** Signals a whole process group; a group that is gone already is fine. */
export const killGroup = (pgid: number | undefined, signal: NodeJS.Signals) => {
  if (pgid === undefined) return
  try {
    process.kill(-pgid, signal)
  } catch {
    // already gone
  }
}

export const killPid = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal)
    return true
  } catch {
    return false
  }
}

export interface ProcStat {
  /** Field 22: start time in clock ticks after the host booted; with the boot id it names a process. */
  readonly starttime: number
  /** utime + stime + cutime + cstime, in seconds. */
  readonly cpuSeconds: number
}

const clockTicks = 100

/** /proc/<pid>/stat, or undefined when the process is gone. The name may hold spaces: parse after ")". */
export const procStat = (pid: number): ProcStat | undefined => {
  try {
    const text = NodeFs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    // fields[0] is field 3 (state); field N is fields[N - 3].
    const ticks = (n: number) => Number(fields[n - 3])
    return { starttime: ticks(22), cpuSeconds: (ticks(14) + ticks(15) + ticks(16) + ticks(17)) / clockTicks }
  } catch {
    return undefined
  }
}

let bootId: string | undefined
/** The host's boot id: a pid and start time name a process only within one boot. */
export const hostBootId = () => (bootId ??= NodeFs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim())

/** The pids of the host, read from /proc. */
export const allPids = () => NodeFs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number)

/** Writes a file atomically (temporary name, then rename), so a crash never leaves half of it. */
export const writeAtomic = (path: string, text: string) => {
  const temporary = `${path}.${process.pid}.tmp`
  NodeFs.writeFileSync(temporary, text)
  NodeFs.renameSync(temporary, path)
}

export const readJson = <A>(path: string): A | undefined => {
  try {
    return JSON.parse(NodeFs.readFileSync(path, "utf8")) as A
  } catch {
    return undefined
  }
}
