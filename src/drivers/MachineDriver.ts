/**
 * The machine driver port: what the operations engine needs from a host to run machines. Kept
 * small so that more drivers (docker, microVMs) can join and pass the same contract suite
 * (test/drivers/contract.ts).
 *
 * Every action is safe to repeat (ARCHITECTURE.md principle 2): an `uncertain` operation is
 * re-applied with the same request after a crash, so `start` of a running machine returns its
 * current boot, `stop` of a stopped one and `destroy` of a missing one succeed, and `create` of an
 * existing disk keeps it.
 */
import { Context, Data, Effect, type Queue } from "effect"
import type * as NodeStream from "node:stream"
import { MachineSize } from "../kernel/domain/MachineStates.js"

export type Size = MachineSize

/** What a machine is made of, as the driver needs it. */
export interface MachineSpec {
  readonly id: string
  readonly size: Size
  readonly image: string
  readonly internetAccess: boolean
  /** Environment variables every process of the machine gets (from its environment). */
  readonly env: Readonly<Record<string, string>>
}

export interface Observed {
  /** The machine's disk exists on this host. */
  readonly exists: boolean
  readonly running: boolean
  /** New at every boot; null when not running. */
  readonly bootId: string | null
}

/** A terminal's size in character cells. */
export interface TerminalSize {
  readonly cols: number
  readonly rows: number
}

/** What a live stdin carries: bytes, or (for a terminal) a new size. */
export type TerminalInput = Uint8Array | TerminalSize

export interface ExecRequest {
  readonly argv: ReadonlyArray<string>
  /** Working directory; relative paths are taken from the machine's home directory. */
  readonly cwd?: string | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly stdin?: Uint8Array | undefined
  /**
   * A live stdin instead of `stdin`: each chunk taken from the queue is written as it comes, and
   * stdin is closed once the queue is shut down (an agent turn's inbox, for steering).
   */
  readonly input?: Queue.Dequeue<TerminalInput> | undefined
  /**
   * Run the command on a new PTY of the machine of this size, in a session of its own with the PTY
   * as its controlling terminal: the terminal's bytes come as `stdout`, `input` is typed into it and
   * its sizes resize it. Interrupting ends the whole session (a shell's jobs too). A driver that
   * cannot make one fails with the permanent code `terminal_unavailable`.
   */
  readonly terminal?: TerminalSize | undefined
  /**
   * Run the command at most once for this id in the machine, even across restarts of svc (the
   * claim files of ExactlyOnce.ts): a repeated exec with the same id waits for the first run and
   * answers its exit code. Apply passes the operation id.
   */
  readonly once?: string | undefined
}

export type OutputStream = "stdout" | "stderr"

export class DriverError extends Data.TaggedError("DriverError")<{
  readonly message: string
  readonly cause?: unknown
  /**
   * Set when the driver knows the request can never succeed (an argument the host cannot take,
   * an impossible path): the operation fails with this error code instead of being re-applied.
   */
  readonly permanent?: string
}> {}

/**
 * An exec no host can run, whatever its state: an argument, the cwd or an environment entry with a
 * NUL byte (execve takes C strings). The request fails for good, not `uncertain`.
 */
export const impossibleExec = (request: ExecRequest, machineId: string): DriverError | undefined =>
  [request.cwd ?? "", ...request.argv, ...Object.entries(request.env ?? {}).flat()].some((field) =>
      field.includes("\0")
    )
    ? new DriverError({
      message: `exec in machine ${machineId}: a NUL byte in an argument, the cwd or the environment`,
      permanent: "invalid_argument"
    })
    : undefined

/** A machine of an image no driver has can never be made: its create and start fail for good. */
export const withKnownImage = <A, E, R>(
  spec: MachineSpec,
  action: Effect.Effect<A, E, R>
): Effect.Effect<A, E | DriverError, R> =>
  spec.image === "default" ? action : Effect.fail(
    new DriverError({
      message: `image ${spec.image}: only "default" (the host's /usr) is supported`,
      permanent: "image_not_found"
    })
  )

/** The machine is not running (or not there): the request cannot be carried out now. */
export class NotRunning extends Data.TaggedError("NotRunning")<{ readonly machineId: string }> {}

/**
 * A machine's use now, as far as its driver can read it (`stats`): each figure the driver cannot
 * read is left out. Limits are those the host enforces (its cgroups), which may differ from the
 * size's when the sizes changed after the boot.
 */
export interface MachineUsage {
  /** Whether the machine runs on this host now; a stopped one has only its CPU total and its disk. */
  readonly running: boolean
  /** CPU seconds since the machine was created on this host, the same count as `cpuSeconds`. */
  readonly cpuSeconds: number
  /** Memory in use, page cache that the kernel can take back left out (as `docker stats` counts). */
  readonly memoryBytes?: number | undefined
  readonly memoryLimitBytes?: number | undefined
  /** Processes and threads (a cgroup's pids count). */
  readonly processes?: number | undefined
  readonly processesLimit?: number | undefined
  /** Bytes in use on the machine's own file system, and that file system's size. */
  readonly diskUsedBytes?: number | undefined
  readonly diskSizeBytes?: number | undefined
}

export interface MachineDriverShape {
  readonly name: string
  /** False for the `process` driver, which runs everything as plain host processes. */
  readonly isolates: boolean
  /**
   * Why this host cannot run machines now (bubblewrap missing, say), or undefined when it can.
   * Changes are then refused with 503 `runtime_unavailable` instead of being accepted.
   */
  readonly unavailable?: string | undefined
  /** Prepares the machine's disk under the data dir. Keeps an existing disk. */
  readonly create: (spec: MachineSpec) => Effect.Effect<void, DriverError>
  /** Boots the machine unless it runs already; answers the boot id now observed. */
  readonly start: (spec: MachineSpec) => Effect.Effect<{ readonly bootId: string }, DriverError>
  /** Ends the machine and every process in it. `force` skips the polite SIGTERM grace. */
  readonly stop: (id: string, options: { readonly force: boolean }) => Effect.Effect<void, DriverError>
  /** Stops the machine and removes its disk. */
  readonly destroy: (id: string) => Effect.Effect<void, DriverError>
  readonly observe: (id: string) => Effect.Effect<Observed, DriverError>
  /**
   * Gives a running machine its internet path or takes it away, without a restart (same boot),
   * and answers once the change is observed on the host (extensions.md §16). A machine that does
   * not run has nothing to change: its next boot takes the setting from its spec. Safe to repeat.
   */
  readonly setInternetAccess: (id: string, enabled: boolean) => Effect.Effect<void, DriverError>
  /**
   * Runs a command inside the running machine and answers its exit code once the command exits
   * (not when its pipes close: a background process it started may keep them and keeps running).
   * Output is handed to `onOutput` as it comes. Interrupting the effect kills the command's
   * process group; processes it detached stay until the machine stops.
   */
  readonly exec: (
    id: string,
    request: ExecRequest,
    onOutput: (stream: OutputStream, chunk: Uint8Array) => Effect.Effect<void>
  ) => Effect.Effect<{ readonly exitCode: number }, DriverError | NotRunning>
  /**
   * A byte stream to TCP `port` on the machine's loopback, for the port proxy: connecting, so a
   * port nobody listens on shows as an error or an end without data on the stream (or fails at
   * once, where the driver can tell: a port of the host that no process of the machine serves).
   */
  readonly connectPort: (id: string, port: number) => Effect.Effect<NodeStream.Duplex, DriverError | NotRunning>
  /**
   * The folder holding the machine's disk on this host (`<data dir>/machines/<id>/disk`; it may not
   * exist yet): snapshots read it, restores and forks fill it before `create`.
   */
  readonly diskPath: (id: string) => string
  /**
   * Pauses every process of a running machine so that its disk can be read consistently (a fork of
   * a running machine); does nothing for a stopped one. `thaw` resumes them; both are safe to repeat.
   */
  readonly freeze: (id: string) => Effect.Effect<void, DriverError>
  readonly thaw: (id: string) => Effect.Effect<void, DriverError>
  /**
   * Copies machine `sourceId`'s whole disk (a running one paused meanwhile) to be the disk of
   * `targetId`, before its `create`, without reading the machine's tree (a fork); answers the bytes
   * copied, or undefined when this disk cannot be copied so (the caller copies `diskPath`'s tree).
   */
  readonly copyDisk?: (sourceId: string, targetId: string) => Effect.Effect<number | undefined, DriverError>
  /**
   * Where the agents' tools folder (`svc agents install`) is readable inside the machines, read-only;
   * undefined when this driver offers none.
   */
  readonly toolsPath?: string | undefined
  /** CPU seconds used by the machine's processes since it was created on this host (monotonic). */
  readonly cpuSeconds: (id: string) => Effect.Effect<number, DriverError>
  /**
   * The machine's use now (GET /v1/machines/{id}/stats, the per-machine series of /metrics): cheap
   * reads of files the host keeps (a few per machine, no process started), so a scrape may ask for
   * every running machine. Optional: a driver without it answers only `cpuSeconds`.
   */
  readonly stats?: ((id: string) => Effect.Effect<MachineUsage, DriverError>) | undefined
}

export class MachineDriver extends Context.Tag("svc/drivers/MachineDriver")<MachineDriver, MachineDriverShape>() {}
