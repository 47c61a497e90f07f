/**
 * The host side of a machine's launcher (launcher.pl): one long-lived process inside a
 * running machine, entered once, that forks every command exec runs there.
 *
 * Why: an exec that spawns from svc forks the whole svc process (milliseconds with a large heap,
 * blocking the event loop every time) and then enters the machine through a chain of processes
 * (a cgroup-joining shell, nsenter). The launcher pays that once per machine boot; afterwards an
 * exec is a frame written to a pipe and a fork inside the machine.
 *
 * Frames both ways are `type (1 byte) | run id (u32 BE) | payload length (u32 BE) | payload`.
 * Runs are multiplexed over one socket, the launcher's fd 3. When the launcher ends (its machine
 * stopped, or it was killed), every run in flight ends with `LauncherGone`.
 */
import { Data, Effect, Fiber, Queue } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import type * as NodeNet from "node:net"
import { onceArgv } from "../ExactlyOnce.js"
import { hostPath, realSleep, reapMillis } from "../HostProcess.js"
import type { OutputStream, TerminalInput, TerminalSize } from "../MachineDriver.js"

/** The launcher ended (or could not start) before the run's command was seen to exit. */
export class LauncherGone extends Data.TaggedError("LauncherGone")<{ readonly reason: string }> {}

export interface LaunchRequest {
  readonly argv: ReadonlyArray<string>
  /**
   * Run `argv` at most once for this operation id (ExactlyOnce.ts): the launcher keeps the claim
   * itself, and runs the exactly-once wrapper only when the claim exists already.
   */
  readonly once?: string | undefined
  /** Absolute, as the machine sees it. */
  readonly cwd: string
  /** The command's whole environment. */
  readonly env: Readonly<Record<string, string>>
  readonly stdin?: Uint8Array | undefined
  /**
   * A live stdin: each chunk is written as it is taken; stdin closes when the queue shuts down. On a
   * terminal, a size taken from it resizes the terminal.
   */
  readonly input?: Queue.Dequeue<TerminalInput> | undefined
  /** Run on a new PTY of this size (the launcher's T frame): its bytes come as stdout. */
  readonly terminal?: TerminalSize | undefined
}

export interface Launcher {
  /**
   * Runs a command in its own session and answers its exit code once it exited and its output was
   * read (or, when a background process holds the output open, a moment after the exit).
   * Interrupting kills the command's process group and waits until it is reaped.
   */
  readonly run: (
    request: LaunchRequest,
    onOutput: (stream: OutputStream, chunk: Uint8Array) => Effect.Effect<void>
  ) => Effect.Effect<{ readonly exitCode: number }, LauncherGone>
  /** Whether the launcher process is still there to take runs. */
  readonly alive: () => boolean
  /** Closes the launcher's channel: it ends once the commands it runs have ended. */
  readonly close: () => void
}

type RunEvent =
  | { readonly _tag: "output"; readonly stream: OutputStream; readonly chunk: Uint8Array }
  | { readonly _tag: "exit"; readonly exitCode: number }
  | { readonly _tag: "gone"; readonly reason: string }

const headerBytes = 9
/**
 * The launcher sends at most 64 KiB at a time. The machine's root can reach the launcher's socket
 * (by ptrace, say), so a larger frame is taken for what it is, not buffered: the launcher is dropped.
 */
const maxFrameBytes = 1 << 20

const frame = (type: "R" | "Q" | "T" | "W" | "I" | "C" | "K", id: number, payload: Uint8Array | string) => {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload
  const header = Buffer.allocUnsafe(headerBytes)
  header.write(type, 0, "latin1")
  header.writeUInt32BE(id, 1)
  header.writeUInt32BE(body.length, 5)
  return Buffer.concat([header, body])
}

/** `cwd, stdin mode, argc, argv..., env name, env value, ...`, joined by NUL (no field holds one). */
const runPayload = (request: LaunchRequest, argv: ReadonlyArray<string>) =>
  [
    request.cwd,
    request.stdin !== undefined || request.input !== undefined ? "p" : "n",
    String(argv.length),
    ...argv,
    ...Object.entries(request.env).flat()
  ].join("\0")

/**
 * An R frame, or with an operation id a Q frame: the id, then the payload of the wrapper's argv
 * (the launcher drops the wrapper when it makes the claim itself, and runs it when the claim exists).
 */
const runFrame = (id: number, request: LaunchRequest) =>
  request.terminal !== undefined
    ? frame("T", id, `${request.terminal.cols}\0${request.terminal.rows}\0${runPayload(request, request.argv)}`)
    : request.once === undefined
    ? frame("R", id, runPayload(request, request.argv))
    : frame("Q", id, `${request.once}\0${runPayload(request, onceArgv(request.once, request.argv))}`)

/**
 * Whether a request can travel in a frame. NUL separates its fields, and no argument, name or value
 * can hold one anyway (execve takes C strings): such a request is refused before it is sent.
 */
export const representable = (request: LaunchRequest) =>
  [request.cwd, request.once ?? "", ...request.argv, ...Object.entries(request.env).flat()].every((field) =>
    !field.includes("\0")
  )

/** The largest piece `coalesce` makes. */
const coalescedBytes = 1 << 20

/**
 * Consecutive chunks of one stream that waited together become one piece (up to 1 MiB): a reader
 * slower than the command (one that persists each piece) gets fewer, larger pieces, not one per frame.
 */
const coalesce = (batch: ReadonlyArray<RunEvent>): ReadonlyArray<RunEvent> => {
  const out: Array<RunEvent> = []
  for (const event of batch) {
    const last = out[out.length - 1]
    if (
      event._tag === "output" && last?._tag === "output" && last.stream === event.stream &&
      last.chunk.length + event.chunk.length <= coalescedBytes
    ) {
      out[out.length - 1] = { ...last, chunk: Buffer.concat([last.chunk, event.chunk]) }
    } else {
      out.push(event)
    }
  }
  return out
}

/** Splits what the launcher sends into frames, across chunk boundaries. */
export const frameReader = (
  onFrame: (type: string, id: number, payload: Buffer) => void,
  onMalformed: () => void
) => {
  let pending: Buffer = Buffer.alloc(0)
  return (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    let offset = 0
    while (pending.length - offset >= headerBytes) {
      const length = pending.readUInt32BE(offset + 5)
      if (length > maxFrameBytes) return onMalformed()
      if (pending.length - offset < headerBytes + length) break
      const start = offset + headerBytes
      onFrame(
        pending.toString("latin1", offset, offset + 1),
        pending.readUInt32BE(offset + 1),
        pending.subarray(start, start + length)
      )
      offset = start + length
    }
    pending = offset === pending.length ? Buffer.alloc(0) : pending.subarray(offset)
  }
}

/** How much of a launcher's complaints its log keeps (per start). */
const logCap = 64 * 1024

/**
 * Starts a launcher with `argv`, a command line that ends in running `perl -e <launcherScript>`
 * inside the machine; its complaints (Perl's, or those of the way in) go to `logFile`. When svc
 * ends, the launcher's channel closes and it ends once its commands have.
 */
export const spawnLauncher = (
  argv: ReadonlyArray<string>,
  logFile: string,
  /** The launcher's own environment (commands get theirs with each run): nothing of svc's. */
  env: Readonly<Record<string, string>> = { PATH: hostPath }
): Launcher => {
  const sinks = new Map<number, (event: RunEvent) => void>()
  let nextId = 1
  let ended: string | undefined
  let child: NodeChild.ChildProcess
  try {
    // Its stderr is a pipe that svc copies to the log, at most `logCap` bytes: the launcher runs
    // in the machine, and a host file it held open would be the machine's to fill (and its path
    // the machine's to read).
    child = NodeChild.spawn(argv[0]!, argv.slice(1), {
      cwd: "/",
      detached: true,
      env,
      stdio: ["ignore", "ignore", "pipe", "pipe"]
    })
    let logged = 0
    child.stderr!.on("data", (chunk: Buffer) => {
      if (logged >= logCap) return
      const kept = chunk.subarray(0, logCap - logged)
      logged += kept.length
      try {
        NodeFs.appendFileSync(logFile, kept, { mode: 0o600 })
      } catch {
        // the machine's folder is gone
      }
    })
  } catch (cause) {
    const reason = `cannot start the launcher: ${String(cause)}`
    return {
      run: () => Effect.fail(new LauncherGone({ reason })),
      alive: () => false,
      close: () => undefined
    }
  }
  const end = (reason: string) => {
    if (ended !== undefined) return
    ended = reason
    for (const sink of sinks.values()) sink({ _tag: "gone", reason })
    sinks.clear()
  }
  // The spawned process (nsenter) exits at once, leaving the launcher to the machine: the pipes
  // closing is what tells that the launcher ended.
  const channel = child.stdio[3] as NodeNet.Socket
  child.on("error", (error) => end(`the launcher failed to start: ${error.message}`))
  channel.on("error", () => undefined) // it ended: the close says so
  channel.on("close", () => end("the launcher ended"))
  channel.on(
    "data",
    frameReader((type, id, payload) => {
      const sink = sinks.get(id)
      if (sink === undefined) return
      if (type === "X") {
        sinks.delete(id)
        return sink({ _tag: "exit", exitCode: Number(payload.toString("latin1")) })
      }
      // A copy: the payload is a view of a buffer the reader reuses.
      sink({ _tag: "output", stream: type === "O" ? "stdout" : "stderr", chunk: Buffer.from(payload) })
    }, () => channel.destroy())
  )
  const send = (buffer: Buffer) => {
    if (ended === undefined) channel.write(buffer)
  }

  const run: Launcher["run"] = (request, onOutput) =>
    Effect.gen(function*() {
      if (ended !== undefined) return yield* new LauncherGone({ reason: ended })
      if (!representable(request)) {
        return yield* new LauncherGone({ reason: "a NUL byte in an argument, the cwd or the environment" })
      }
      const events = yield* Queue.unbounded<RunEvent>()
      const id = nextId
      nextId = nextId === 0xffff_ffff ? 1 : nextId + 1
      sinks.set(id, (event) => void Queue.unsafeOffer(events, event))
      send(runFrame(id, request))
      if (request.stdin !== undefined) {
        send(frame("I", id, request.stdin))
        send(frame("C", id, ""))
      }
      let exited = false
      const handle = (
        batch: ReadonlyArray<RunEvent>,
        index: number
      ): Effect.Effect<{ readonly exitCode: number }, LauncherGone> => {
        const event = batch[index]
        if (event === undefined) return untilExit
        switch (event._tag) {
          case "output":
            return Effect.zipRight(onOutput(event.stream, event.chunk), handle(batch, index + 1))
          case "exit":
            exited = true
            return Effect.succeed({ exitCode: event.exitCode })
          case "gone":
            exited = true
            return Effect.fail(new LauncherGone({ reason: event.reason }))
        }
      }
      const untilExit: Effect.Effect<{ readonly exitCode: number }, LauncherGone> = Effect.flatMap(
        Effect.zipWith(Queue.take(events), Queue.takeAll(events), (first, rest) => coalesce([first, ...rest])),
        (batch) => handle(batch, 0)
      )
      // Its exit (or the launcher's end) is the last event of a run: the rest of its output is dropped.
      const reaped: Effect.Effect<void> = Effect.flatMap(
        Queue.take(events),
        (event) => event._tag === "output" ? reaped : Effect.void
      )
      // A live stdin is fed by a fiber of its own (none is forked for the usual exec without one).
      const input = request.input
      const feeder = input === undefined ? undefined : yield* Effect.forkDaemon(
        Effect.forever(
          Effect.flatMap(Queue.take(input), (chunk) =>
            Effect.sync(() =>
              send(
                chunk instanceof Uint8Array ? frame("I", id, chunk) : frame("W", id, `${chunk.cols} ${chunk.rows}`)
              )
            ))
        ).pipe(Effect.ensuring(Effect.sync(() => send(frame("C", id, "")))))
      )
      return yield* untilExit.pipe(
        Effect.ensuring(feeder === undefined ? Effect.void : Fiber.interrupt(feeder)),
        Effect.onInterrupt(() =>
          exited ? Effect.void : Effect.zipRight(
            Effect.sync(() => send(frame("K", id, "9"))),
            // Nothing of it outlives the interruption; still, not forever. (Both sides are made
            // interruptible: this runs as a finalizer, and the loser must be stopped at once.)
            Effect.raceFirst(Effect.interruptible(reaped), Effect.interruptible(realSleep(reapMillis)))
          )
        ),
        Effect.ensuring(Effect.sync(() => sinks.delete(id)))
      )
    })

  return {
    run,
    alive: () => ended === undefined,
    close: () => {
      if (ended === undefined) channel.end()
    }
  }
}
