/**
 * `read_file` and `write_file`: each one exec of a small shell script in the machine, whose answer
 * svc takes back bounded by what was asked. The machine's root may replace `head`, `cat` or `wc`
 * (a bind mount over /usr/bin/head) and answer anything, for as long as it likes: a read keeps at
 * most the bytes of the ranges asked and stops the script once the machine sends one more
 * (`read_limit_exceeded`); a write keeps nothing of the script's output; both end after a time
 * limit (`file_operation_timeout`) or at a cancel, which kills the script and frees the machine's
 * mailbox for its next operation.
 */
import { Deferred, Duration, Effect, Exit } from "effect"
import { guestArgv } from "../drivers/Guest.js"
import type { ExecRequest, MachineDriverShape } from "../drivers/MachineDriver.js"
import type { FileRange, Outcome } from "./Outcome.js"

/** How long a file read or write may take (`AppConfig.fileOperationSeconds` changes it, for tests). */
export const defaultFileOperationSeconds = 60

type Ended =
  | { readonly _tag: "exited"; readonly exitCode: number }
  | { readonly _tag: "timed_out" | "cancelled" | "refused" }

const timedOut = Exit.succeed<Ended>({ _tag: "timed_out" })
const cancelled = Exit.succeed<Ended>({ _tag: "cancelled" })
const refused = Exit.succeed<Ended>({ _tag: "refused" })

/**
 * Runs `request` in the machine, handing its stdout to `take` (stderr is dropped), until it exits,
 * `take` refuses a chunk (answers false), `seconds` pass or `cancel` completes: whichever comes
 * first ends the others (the exec's interruption kills its process group).
 */
const boundedExec = (
  driver: MachineDriverShape,
  machineId: string,
  request: ExecRequest,
  take: (chunk: Uint8Array) => boolean,
  seconds: number,
  cancel: Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const stop = yield* Deferred.make<void>()
    let open = true
    const run = driver.exec(machineId, request, (stream, chunk) => {
      if (stream !== "stdout" || !open || take(chunk)) return Effect.void
      open = false
      return Deferred.succeed(stop, undefined)
    })
    return yield* Effect.flatten(Effect.raceAll([
      Effect.exit(Effect.map(run, (exit): Ended => ({ _tag: "exited", exitCode: exit.exitCode }))),
      Effect.as(Deferred.await(stop), refused),
      Effect.as(Effect.sleep(Duration.seconds(seconds)), timedOut),
      Effect.as(cancel, cancelled)
    ]))
  })

/**
 * Every range in one exec (one process chain into the machine, not one per range): for each
 * `path offset size` triple it prints `M` for a missing file, `N` for something that is there but
 * is not a file (a directory), or `D <n>` and then the n bytes.
 */
const readRangesScript = `t=$(mktemp) || exit 1
while [ $# -ge 3 ]; do
  if [ -f "$1" ]; then
    tail -c +$(($2 + 1)) "$1" | head -c "$3" > "$t"; printf 'D %s\\n' "$(wc -c < "$t")"; cat "$t"
  elif [ -e "$1" ]; then
    printf 'N\\n'
  else
    printf 'M\\n'
  fi
  shift 3
done
rm -f "$t"`

/** A header line is `M`, `N` or `D <n>`: anything longer is not one. */
const headerLimit = 32

interface Requested {
  readonly path: string
  readonly offset: number
  readonly size: number
}

/**
 * Reads what `readRangesScript` prints as it comes, keeping only the bytes of the ranges asked:
 * a range announced longer than its size, or a byte after the last range, is more than was asked
 * (`read_limit_exceeded`); a line that is no header is `guest_action_failed`. Either refuses the
 * chunk, which stops the script: svc never holds more than the sizes asked plus one header.
 */
class RangeReader {
  private readonly ranges: Array<FileRange> = []
  private header: Array<number> = []
  private data: Buffer | undefined
  private filled = 0
  notAFile = false
  problem: "read_limit_exceeded" | "guest_action_failed" | undefined

  constructor(private readonly requested: ReadonlyArray<Requested>) {}

  /** False once the machine sent something it was not asked for. */
  take(chunk: Uint8Array): boolean {
    let at = 0
    while (at < chunk.length) {
      const range = this.requested[this.ranges.length]
      if (range === undefined) return this.refuse("read_limit_exceeded")
      if (this.data !== undefined) {
        const copied = Math.min(this.data.length - this.filled, chunk.length - at)
        this.data.set(chunk.subarray(at, at + copied), this.filled)
        this.filled += copied
        at += copied
        if (this.filled === this.data.length) this.close(range, this.data)
        continue
      }
      const byte = chunk[at++]!
      if (byte !== 10) {
        if (this.header.length >= headerLimit) return this.refuse("guest_action_failed")
        this.header.push(byte)
        continue
      }
      const line = Buffer.from(this.header).toString("latin1")
      this.header = []
      if (line === "M") {
        this.ranges.push({ path: range.path, offset: range.offset, size: 0, data_base64: "", missing: true })
      } else if (line === "N") {
        this.notAFile = true
        this.close(range, Buffer.alloc(0))
      } else {
        const match = /^D (\d+)$/.exec(line)
        if (match === null) return this.refuse("guest_action_failed")
        const size = Number(match[1])
        if (size > range.size) return this.refuse("read_limit_exceeded")
        this.data = Buffer.allocUnsafe(size)
        this.filled = 0
        if (size === 0) this.close(range, this.data)
      }
    }
    return true
  }

  private close(range: Requested, data: Buffer) {
    this.ranges.push({
      path: range.path,
      offset: range.offset,
      size: data.length,
      data_base64: data.toString("base64"),
      missing: false
    })
    this.data = undefined
  }

  private refuse(problem: "read_limit_exceeded" | "guest_action_failed") {
    this.problem = problem
    return false
  }

  /** Every range, once the script printed them all (and nothing more). */
  done(): ReadonlyArray<FileRange> | undefined {
    return this.ranges.length === this.requested.length && this.header.length === 0 ? this.ranges : undefined
  }
}

export const readRanges = (
  driver: MachineDriverShape,
  machineId: string,
  requested: ReadonlyArray<Requested>,
  seconds: number,
  cancel: Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const reader = new RangeReader(requested)
    const ended = yield* boundedExec(
      driver,
      machineId,
      {
        argv: [
          "/bin/sh",
          "-c",
          readRangesScript,
          "read",
          ...requested.flatMap((r) => [r.path, String(r.offset), String(r.size)])
        ]
      },
      (chunk) => reader.take(chunk),
      seconds,
      cancel
    )
    if (ended._tag === "timed_out") return failure("file_operation_timeout")
    if (ended._tag === "cancelled") return failure("cancelled")
    if (reader.problem !== undefined) return failure(reader.problem)
    const ranges = reader.done()
    if (ranges === undefined) return failure("guest_action_failed")
    if (reader.notAFile) return failure("not_a_file")
    return { status: "succeeded", unchanged: true, machine: {}, fileRanges: ranges } satisfies Outcome
  })

const failure = (errorCode: string): Outcome => ({ status: "failed", errorCode })

export interface WriteRequest {
  readonly path: string
  readonly data: Uint8Array
  readonly mode?: string | undefined
  readonly append: boolean
}

/**
 * Writes the file, once for `operationId` even across restarts of svc (the exec's `once`). A write
 * that timed out or was cancelled may have written part of the file: it ends `correlation_miss`.
 */
export const writeFile = (
  driver: MachineDriverShape,
  machineId: string,
  operationId: string,
  request: WriteRequest,
  seconds: number,
  cancel: Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const ended = yield* boundedExec(
      driver,
      machineId,
      {
        argv: guestArgv("write-file", request.path, request.append ? "append" : "replace", request.mode ?? ""),
        stdin: request.data,
        once: operationId
      },
      () => true,
      seconds,
      cancel
    )
    switch (ended._tag) {
      case "exited":
        return ended.exitCode === 0
          ? { status: "succeeded", unchanged: false, machine: {} } satisfies Outcome
          : failure("write_failed")
      case "timed_out":
        return { status: "correlation_miss", errorCode: "file_operation_timeout" } satisfies Outcome
      case "cancelled":
      case "refused":
        return { status: "correlation_miss", errorCode: "cancelled" } satisfies Outcome
    }
  })
