/**
 * One operation carried out by its machine's actor: decode, admission, claim, apply (src/runtime/
 * Apply.ts), re-applied while the outcome is uncertain, then settled (src/runtime/Settle.ts).
 */
import { Clock, Deferred, Effect, Either, Option } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { type Admission, needsSlot } from "./Admission.js"
import { apply } from "./Apply.js"
import { retryDelay } from "./Backoff.js"
import { OutputCollector } from "./ExecOutput.js"
import { defaultFileOperationSeconds } from "./FileTransfers.js"
import { MachineEnvironments } from "./MachineEnvironments.js"
import { MachinesRepo } from "./MachinesRepo.js"
import { type OperationRow, OperationsRepo } from "./OperationsRepo.js"
import { type Outcome } from "./Outcome.js"
import { decodeRequest } from "./Requests.js"
import { type Settling } from "./Settle.js"
import { SnapshotWork } from "./SnapshotWork.js"

/** An operation being carried out, as a cancel sees it. */
export interface Running {
  /** Completed by a cancel: an exec, the start queue and a retry's wait answer it at once. */
  readonly cancelled: Deferred.Deferred<void>
  /** Set before the actor is interrupted for this operation, which then settles as cancelled. */
  abandoned: boolean
  /** Set once the operation is being settled: an interrupt then no longer settles it. */
  settled: boolean
}

/** The kinds that boot the machine, so need its environment's variables. */
const boots: ReadonlySet<string> = new Set(["create", "start", "restart", "fork", "restore"])

/**
 * A cancelled operation whose effect on the host cannot be known (it was running or being
 * retried): `correlation_miss`, "treat as not done", with error_code `cancelled`. Never `failed`,
 * which promises it did not happen.
 */
const cancelledUnknown = { status: "correlation_miss", errorCode: "cancelled" } as const

/** `cancels` holds the operations being carried out, by id, for a cancel to find. */
export const makeRun = (settling: Settling, admission: Admission, cancels: Map<string, Running>) =>
  Effect.gen(function*() {
    const environments = yield* MachineEnvironments
    const machines = yield* MachinesRepo
    const operations = yield* OperationsRepo
    const driver = yield* MachineDriver
    const snapshotWork = yield* SnapshotWork
    const { fileOperationSeconds } = yield* AppConfig
    const workers = {
      driver,
      snapshots: snapshotWork,
      fileOperationSeconds: fileOperationSeconds ?? defaultFileOperationSeconds
    }
    const { persistAhead, recordNow, recordStatus, settle } = settling

    /** The output of earlier attempts, so a re-applied exec's result holds all of it. */
    const earlierOutput = (operation: OperationRow) =>
      Effect.map(operations.outputOf(operation.id), (rows) => {
        const collector = new OutputCollector()
        for (const row of rows) {
          const data = JSON.parse(row.data) as { stream: "stdout" | "stderr"; data_base64: string }
          collector.add(data.stream, Buffer.from(data.data_base64, "base64"))
        }
        return collector
      })

    /** Carries one operation to a terminal status, re-applying it while the outcome is uncertain. */
    return (initial: OperationRow) => {
      const request = decodeRequest(initial)
      const slotted = Either.isRight(request) && needsSlot(request.right)
      let attempts = initial.attempt_count
      let running: Running | undefined
      /** Settles once: uninterruptible, so an interrupt from a cancel cannot cut a settle in two. */
      const finish = (outcome: Exclude<Outcome, { status: "uncertain" }>) =>
        Effect.suspend(() => {
          if (running !== undefined) running.settled = true
          return Effect.uninterruptible(settle(initial, attempts, outcome))
        })
      return Effect.gen(function*() {
        if (Either.isLeft(request)) {
          yield* Effect.logError("operation request does not decode").pipe(
            Effect.annotateLogs({ operation_id: initial.id, reason: request.left })
          )
          return yield* finish({ status: "failed", errorCode: "invalid_request" })
        }
        const decoded = request.right
        const cancelled = yield* Deferred.make<void>()
        running = { cancelled, abandoned: false, settled: false }
        cancels.set(initial.id, running)
        if (slotted) {
          const slot = yield* admission.admit(initial, cancelled)
          if (slot === "cancelled") return
          if (slot === "expired") return yield* finish(yield* admission.noCapacity(initial, decoded))
        }
        while (true) {
          const machine = yield* machines.find(initial.machine_id)
          if (Option.isNone(machine)) return
          attempts += 1
          const claimed = yield* persistAhead((published) =>
            Effect.gen(function*() {
              const now = yield* Clock.currentTimeMillis
              if (!(yield* operations.claim(initial.id, attempts, now))) return false
              yield* recordStatus(published, initial, "running", attempts, null, now)
              return true
            })
          )
          if (!claimed) return
          // Only a boot reads the (sealed) environment, and only a re-applied operation has earlier
          // output: an exec, the hot path, does neither query.
          const { environment_id, environment_version } = machine.value
          const env = !boots.has(initial.kind) || environment_id === null || environment_version === null
            ? {}
            : yield* environments.variables(environment_id, environment_version)
          const outcome = yield* apply(initial, decoded, machine.value, {
            env,
            cancelled: Deferred.await(cancelled),
            earlierOutput: attempts === 1 ? new OutputCollector() : yield* earlierOutput(initial),
            onOutput: (stream, chunk) =>
              recordNow(initial, "output", { stream, data_base64: Buffer.from(chunk).toString("base64") }),
            onProgress: (doneBytes, totalBytes) =>
              recordNow(initial, "progress", { done_bytes: doneBytes, total_bytes: totalBytes })
          }, workers)
          if (outcome.status !== "uncertain") return yield* finish(outcome)
          yield* Effect.logWarning("operation uncertain; will re-apply").pipe(
            Effect.annotateLogs({ operation_id: initial.id, reason: outcome.reason, attempt: attempts })
          )
          // Written ahead of the disk like the claim: a restart finds the operation `running` and
          // marks it `uncertain` itself. The retry's wait starts at once, not after a flush.
          yield* persistAhead((published) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.zipRight(
                operations.update(initial.id, { status: "uncertain" }),
                recordStatus(published, initial, "uncertain", attempts, null, now)
              ))
          )
          // A cancel while it waits to be re-applied ends it: its outcome stays unknown.
          const retry = yield* Effect.raceFirst(
            Effect.as(Effect.sleep(retryDelay(attempts)), "retry" as const),
            Effect.as(Deferred.await(cancelled), "cancelled" as const)
          )
          if (retry === "cancelled") return yield* finish(cancelledUnknown)
        }
      }).pipe(
        // One finalizer, not two: each is an uninterruptible region of its own. An operation whose
        // actor a cancel interrupted (it did not end within the grace) is settled here.
        Effect.ensuring(Effect.suspend(() => {
          cancels.delete(initial.id)
          const release = slotted ? admission.release(initial.machine_id) : admission.pump
          return running?.abandoned === true && !running.settled
            ? Effect.zipRight(settle(initial, attempts, cancelledUnknown), release)
            : release
        }))
      )
    }
  })
