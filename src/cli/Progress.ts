/**
 * Waiting for an operation (`svc ops wait`, `--wait`) with progress on stderr: on a terminal one
 * line that keeps updating (spinner, status, attempt, time), replaced by the outcome at the end;
 * otherwise (a pipe, a log file, CI) a plain line each time the status changes. The polling is the
 * client's `waitOperation` (250 ms growing to 2 s, up to 10 minutes); a wait that ends does not
 * cancel the operation.
 */
import { Duration, Effect, Ref, Schedule } from "effect"
import type { Client, WaitOptions } from "../client/Client.js"
import type { OperationDto } from "../operations/Api.js"
import { CommandFailed } from "./Failure.js"
import { printJson, stderr, stdout } from "./Output.js"

const spinner = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

const seconds = (millis: number) => `${(millis / 1000).toFixed(1)}s`

const describe = (op: OperationDto) =>
  `${op.kind} ${op.id}: ${op.status}${op.attempt_count > 1 ? ` (attempt ${op.attempt_count})` : ""}` +
  (op.starting_soon !== null ? ` (queued, position ${op.starting_soon.position})` : "") +
  (op.error_code !== null ? ` ${op.error_code}` : "")

/** Whether progress is drawn as one updating line: stderr is a terminal and TERM is not `dumb`. */
export const interactive = () => process.stderr.isTTY === true && process.env.TERM !== "dumb"

/**
 * Waits for the operation to end showing its progress; answers it when it `succeeded`, fails with
 * CommandFailed (exit 1) naming its status and error code otherwise.
 */
export const waitWithProgress = (
  client: Client,
  operationId: string,
  /** quiet: no plain lines off a terminal; hidden: no progress at all. */
  options: WaitOptions & { readonly quiet?: boolean; readonly hidden?: boolean } = {}
) =>
  Effect.gen(function*() {
    const started = Date.now()
    const last = yield* Ref.make<OperationDto | undefined>(undefined)
    const tty = interactive() && options.hidden !== true
    let frame = 0
    const draw = Effect.flatMap(Ref.get(last), (op) =>
      stderr(
        `\r\x1b[K${spinner[frame++ % spinner.length]} ${op === undefined ? operationId : describe(op)} ${
          seconds(Date.now() - started)
        }`
      ))
    const observe = (op: OperationDto) =>
      Effect.flatMap(Ref.getAndSet(last, op), (previous) =>
        tty || options.quiet === true || options.hidden === true ||
          (previous !== undefined && describe(previous) === describe(op))
          ? Effect.void
          : stderr(`operation ${describe(op)}\n`))
    if (tty) {
      yield* Effect.forkScoped(Effect.repeat(draw, Schedule.spaced(Duration.millis(100))))
      // Interrupted (Ctrl-C) or failed: the line is left with a newline, not half drawn.
      yield* Effect.addFinalizer(() => stderr("\r\x1b[K"))
    }
    const done = yield* client.waitOperation(operationId, { ...options, observe })
    if (tty) {
      const mark = done.status === "succeeded" ? "✓" : "✗"
      yield* stderr(`\r\x1b[K${mark} ${describe(done)} in ${seconds(Date.now() - started)}\n`)
    }
    if (done.status !== "succeeded") {
      return yield* new CommandFailed({
        message: `operation ${done.id} ${done.status}${done.error_code !== null ? `: ${done.error_code}` : ""}`
      })
    }
    return done
  }).pipe(Effect.scoped)

/**
 * What a change command prints once its 202 came: the acceptance (JSON, or a line naming the
 * operation and how to follow it); with `--wait`, the finished operation instead, after its progress.
 */
export const reportAccepted = (
  client: Client,
  accepted: { readonly operation_id: string; readonly machine_id: string },
  options: { readonly wait: boolean; readonly json: boolean; readonly what: string }
) =>
  options.wait
    ? Effect.flatMap(waitWithProgress(client, accepted.operation_id), (done) =>
      options.json ? printJson(done) : stdout(`${options.what}: done (machine ${done.machine_id})\n`))
    : options.json
    ? printJson(accepted)
    : stdout(
      `${options.what}: accepted as operation ${accepted.operation_id}\n` +
        `  follow it with: svc ops wait ${accepted.operation_id}\n`
    )
