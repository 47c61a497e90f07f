/**
 * Carrying out one operation on the host: what each kind asks of the driver and how its outcome is
 * judged. An outcome is `succeeded` only when the expected state is observed (a new boot id after a
 * restart, no disk after a delete); a driver that cannot answer makes it `uncertain`, and the actor
 * re-applies the same request later. Nothing here writes to the database: the actor settles.
 */
import { Clock, type Context, Effect, Exit, Option } from "effect"
import type { DriverError, MachineDriverShape, MachineSpec, NotRunning } from "../drivers/MachineDriver.js"
import { conflictOf, type MachineConflict, makesMachine } from "../kernel/domain/MachineStates.js"
import { type ExposedPort, findPort, parsePorts, portsJson, withoutPort, withPort } from "../kernel/domain/Ports.js"
import { OutputCollector } from "./ExecOutput.js"
import { readRanges, writeFile } from "./FileTransfers.js"
import type { MachinePatch, MachineRow } from "./MachinesRepo.js"
import type { OperationRow } from "./OperationsRepo.js"
import type { ExecResult, Outcome } from "./Outcome.js"
import type { DecodedRequest } from "./Requests.js"
import { fillSourceOf, type SnapshotWork } from "./SnapshotWork.js"

/** What an exec-like step reports while it runs. */
export interface ExecHooks {
  readonly onOutput: (stream: "stdout" | "stderr", chunk: Uint8Array) => Effect.Effect<void>
  /** Completes when a caller cancels the operation. */
  readonly cancelled: Effect.Effect<void>
  /** The output persisted by earlier attempts of this operation, to start the result from. */
  readonly earlierOutput: OutputCollector
  /** The variables of the machine's environment version, for a boot. */
  readonly env: Readonly<Record<string, string>>
  /** How far a snapshot push, fork or restore has come (persisted as `progress` events). */
  readonly onProgress: (doneBytes: number, totalBytes: number) => Effect.Effect<void>
}

/**
 * The services an operation is carried out with. Handed over as an argument, not through the
 * context: providing them per operation copied the actor's whole context twice (docs/benchmarks.md).
 */
export interface Workers {
  readonly driver: MachineDriverShape
  readonly snapshots: Context.Tag.Service<typeof SnapshotWork>
  /** How long a file read or write may take (src/runtime/FileTransfers.ts). */
  readonly fileOperationSeconds: number
}

export const specOf = (machine: MachineRow, env: Readonly<Record<string, string>>): MachineSpec => ({
  id: machine.id,
  size: machine.size,
  image: machine.image,
  internetAccess: machine.internet_access === 1,
  env
})

const outcome = (value: Outcome) => value

const uncertain = (error: DriverError | NotRunning): Outcome => ({
  status: "uncertain",
  reason: error._tag === "NotRunning" ? "the machine stopped answering" : error.message
})

const failed = (errorCode: MachineConflict | string, machine?: MachinePatch): Outcome =>
  machine === undefined ? { status: "failed", errorCode } : { status: "failed", errorCode, machine }

type Ended = { readonly _tag: "exited"; readonly exitCode: number } | { readonly _tag: "timed_out" | "cancelled" }
const timedOut = Exit.succeed<Ended>({ _tag: "timed_out" })
const cancelled = Exit.succeed<Ended>({ _tag: "cancelled" })

/** Runs `argv` once for this operation; answers the exec result (timed out, cancelled, truncated). */
const runOnce = (
  driver: MachineDriverShape,
  machine: MachineRow,
  operation: OperationRow,
  request: {
    argv: ReadonlyArray<string>
    cwd?: string | undefined
    env?: Readonly<Record<string, string>> | undefined
    stdin?: Uint8Array | undefined
    timeoutSeconds: number
  },
  hooks: ExecHooks
) =>
  Effect.gen(function*() {
    const output = hooks.earlierOutput
    const run = driver.exec(machine.id, {
      argv: request.argv,
      once: operation.id,
      cwd: request.cwd,
      env: request.env,
      stdin: request.stdin
    }, (stream, chunk) => {
      output.add(stream, chunk)
      return hooks.onOutput(stream, chunk)
    })
    // One race of three fibers, each answering an exit so that the first to end wins (a failed
    // command too): `timeoutTo` inside `raceFirst` forked four and joined two, about 40 more
    // runtime steps per exec. The race resumes once the losers are interrupted (the command killed).
    const ended = yield* Effect.flatten(Effect.raceAll([
      Effect.exit(Effect.map(run, (exit): Ended => ({ _tag: "exited", exitCode: exit.exitCode }))),
      Effect.as(Effect.sleep(`${request.timeoutSeconds} seconds`), timedOut),
      Effect.as(hooks.cancelled, cancelled)
    ]))
    const result: ExecResult = {
      exit_code: ended._tag === "exited" ? ended.exitCode : -1,
      stdout_base64: output.base64("stdout"),
      stderr_base64: output.base64("stderr"),
      timed_out: ended._tag === "timed_out",
      cancelled: ended._tag === "cancelled",
      truncated: output.truncated
    }
    return result
  })

/** The conflict that keeps this operation from running on the machine as it is now, if any. */
const conflictNow = (operation: OperationRow, machine: MachineRow) =>
  makesMachine(operation.kind) ? undefined : conflictOf(operation.kind, machine.state)

export const apply = (
  operation: OperationRow,
  decoded: DecodedRequest,
  machine: MachineRow,
  hooks: ExecHooks,
  { driver, fileOperationSeconds, snapshots }: Workers
): Effect.Effect<Outcome> =>
  Effect.gen(function*() {
    const spec = specOf(machine, hooks.env)
    const conflict = conflictNow(operation, machine)
    if (conflict !== undefined) return failed(conflict)
    const now = yield* Clock.currentTimeMillis

    const boot = Effect.gen(function*() {
      const { bootId } = yield* driver.start(spec)
      const seen = yield* driver.observe(machine.id)
      return seen.running && seen.bootId === bootId ? Option.some(bootId) : Option.none()
    })

    switch (decoded.kind) {
      case "fork":
      case "restore":
      case "create": {
        const { request } = decoded
        const source = fillSourceOf(decoded.kind, request)
        if (source !== undefined) {
          const refused = yield* snapshots.fill(source, machine, hooks.onProgress)
          if (Option.isSome(refused)) return failed(refused.value, { state: "failed" })
        }
        yield* driver.create(spec)
        if (!request.start) {
          return outcome({ status: "succeeded", unchanged: false, machine: { state: "stopped" } })
        }
        const booted = yield* boot
        if (Option.isNone(booted)) {
          return outcome({ status: "correlation_miss", machine: { state: "failed" } })
        }
        const running: MachinePatch = { state: "running", boot_id: booted.value, started_at: now }
        if (typeof request.setup_script !== "string") {
          return outcome({ status: "succeeded", unchanged: false, machine: running })
        }
        const setup = yield* runOnce(driver, machine, operation, {
          argv: ["/bin/sh", "-c", request.setup_script],
          timeoutSeconds: 3600
        }, hooks)
        return outcome({ status: "succeeded", unchanged: false, machine: running, execResult: setup })
      }
      case "start": {
        const seen = yield* driver.observe(machine.id)
        if (seen.running && machine.state === "running") {
          return outcome({ status: "succeeded", unchanged: true, machine: {} })
        }
        const booted = yield* boot
        if (Option.isNone(booted)) {
          return outcome({ status: "correlation_miss" })
        }
        return outcome({
          status: "succeeded",
          unchanged: false,
          machine: { state: "running", boot_id: booted.value, started_at: now, last_stop_reason: null }
        })
      }
      case "stop": {
        const { request } = decoded
        const seen = yield* driver.observe(machine.id)
        const stopped: MachinePatch = {
          state: "stopped",
          boot_id: null,
          stopped_at: now,
          last_stop_reason: request.stop_reason
        }
        if (!seen.running) {
          return outcome({ status: "succeeded", unchanged: machine.state === "stopped", machine: stopped })
        }
        yield* driver.stop(machine.id, { force: request.force })
        const after = yield* driver.observe(machine.id)
        return outcome(
          after.running ? { status: "correlation_miss" } : { status: "succeeded", unchanged: false, machine: stopped }
        )
      }
      case "restart": {
        const before = yield* driver.observe(machine.id)
        yield* driver.stop(machine.id, { force: false })
        const booted = yield* boot
        if (Option.isNone(booted) || booted.value === before.bootId) {
          return outcome({ status: "correlation_miss" })
        }
        return outcome({
          status: "succeeded",
          unchanged: false,
          machine: { state: "running", boot_id: booted.value, started_at: now }
        })
      }
      case "delete": {
        yield* driver.destroy(machine.id)
        const after = yield* driver.observe(machine.id)
        return outcome(
          after.exists
            ? { status: "correlation_miss" }
            : { status: "succeeded", unchanged: false, machine: { state: "deleted", boot_id: null, deleted_at: now } }
        )
      }
      case "exec": {
        const { request } = decoded
        const argv: ReadonlyArray<string> = request.command ?? ["/bin/sh", "-c", request.shell ?? ""]
        const result = yield* runOnce(driver, machine, operation, {
          argv,
          cwd: request.cwd,
          env: request.env,
          stdin: request.stdin_base64 === undefined ? undefined : Buffer.from(request.stdin_base64, "base64"),
          timeoutSeconds: request.timeout_seconds
        }, hooks)
        const activity = { last_activity_at: now }
        return outcome(
          result.cancelled
            ? { status: "failed", errorCode: "cancelled", execResult: result, machine: activity }
            : { status: "succeeded", unchanged: false, machine: activity, execResult: result }
        )
      }
      case "write_file": {
        const { request } = decoded
        const written = yield* writeFile(
          driver,
          machine.id,
          operation.id,
          {
            path: request.path,
            data: Buffer.from(request.data_base64, "base64"),
            mode: request.mode,
            append: request.append
          },
          fileOperationSeconds,
          hooks.cancelled
        )
        return written.status === "succeeded" ? { ...written, machine: { last_activity_at: now } } : written
      }
      case "install_ssh_key": {
        const { request } = decoded
        // Exit 10: the key is there already. The file is the one an sshd in the machine would read.
        const result = yield* runOnce(driver, machine, operation, {
          argv: [
            "/bin/sh",
            "-c",
            `mkdir -p "$HOME/.ssh" && chmod 700 "$HOME/.ssh" && f="$HOME/.ssh/authorized_keys" &&
if [ -f "$f" ] && grep -qxF "$1" "$f"; then exit 10; fi
printf '%s\\n' "$1" >> "$f" && chmod 600 "$f"`,
            "ssh-key",
            request.public_key
          ],
          timeoutSeconds: 60
        }, hooks)
        if (result.exit_code !== 0 && result.exit_code !== 10) return failed("guest_action_failed")
        return outcome({ status: "succeeded", unchanged: result.exit_code === 10, machine: {} })
      }
      case "apply_environment": {
        const version = decoded.request.version
        return outcome({
          status: "succeeded",
          unchanged: machine.environment_version === version,
          machine: { environment_version: version }
        })
      }
      case "set_internet_access": {
        const enabled = decoded.request.enabled ? 1 : 0
        // A running machine's network changes now, and the driver answers once it sees the change.
        if (machine.state === "running") yield* driver.setInternetAccess(machine.id, enabled === 1)
        return outcome({
          status: "succeeded",
          unchanged: machine.internet_access === enabled,
          machine: { internet_access: enabled }
        })
      }
      case "expose_port": {
        const before = parsePorts(machine.ports)
        const port: ExposedPort = { port: decoded.request.port, public: decoded.request.public }
        const existing = findPort(before, port.port)
        return outcome({
          status: "succeeded",
          unchanged: existing !== undefined && existing.public === port.public,
          machine: { ports: portsJson(withPort(before, port)) }
        })
      }
      case "unexpose_port": {
        const before = parsePorts(machine.ports)
        const port = decoded.request.port
        return outcome({
          status: "succeeded",
          unchanged: findPort(before, port) === undefined,
          machine: { ports: portsJson(withoutPort(before, port)) }
        })
      }
      case "snapshot": {
        return yield* snapshots.push(operation, machine, hooks.onProgress)
      }
      case "read_file": {
        const read = yield* readRanges(
          driver,
          machine.id,
          decoded.request.ranges,
          fileOperationSeconds,
          hooks.cancelled
        )
        return read.status === "succeeded" ? { ...read, machine: { last_activity_at: now } } : read
      }
    }
  }).pipe(
    Effect.catchAll((error) =>
      error._tag === "NotRunning"
        ? vanished(driver, machine)
        : Effect.succeed(
          error.permanent === undefined
            ? uncertain(error)
            // A machine that cannot be made (an image no host has) is failed with its operation.
            : failed(error.permanent, makesMachine(operation.kind) ? { state: "failed" } : undefined)
        )
    )
  )

/**
 * The driver found no running machine where the database has one: its sandbox ended on its own (a
 * crash, the host restarted). Confirmed by observing, the machine is stopped (it can be started
 * again, its disk is kept) and the operation fails as it would have at accept time. Retrying could
 * never succeed and would hold up the machine's later operations (a stop, a start).
 */
const vanished = (driver: MachineDriverShape, machine: MachineRow) =>
  Effect.gen(function*() {
    const seen = yield* driver.observe(machine.id)
    if (seen.running) return outcome({ status: "uncertain", reason: "the machine stopped answering" })
    const now = yield* Clock.currentTimeMillis
    return failed("machine_not_running", stoppedOnItsOwn(now))
  }).pipe(Effect.catchAll((error) => Effect.succeed(uncertain(error))))

/** The machine row of a machine whose sandbox ended without a stop operation. */
export const stoppedOnItsOwn = (now: number): MachinePatch => ({
  state: "stopped",
  boot_id: null,
  stopped_at: now,
  last_stop_reason: null
})
