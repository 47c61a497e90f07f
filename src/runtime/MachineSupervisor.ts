/**
 * The supervisor: one actor fiber per machine with work, each taking that machine's operations one
 * at a time in acceptance order from the operations table (the durable mailbox; the in-memory queue
 * only wakes the fiber). No machine waits for another. An actor that dies is restarted alone. On
 * start, what was `running` becomes `uncertain` and every machine with open work is woken.
 */
import { Cause, Clock, Context, Deferred, Effect, Either, Fiber, Layer, Option } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { type MachineState, OperationStatus } from "../kernel/domain/MachineStates.js"
import { Entitlements } from "../kernel/Entitlements.js"
import { type DomainEvent, DomainEvents } from "../kernel/events/DomainEvents.js"
import { EventRecorders } from "../kernel/events/EventRecorders.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { apply, specOf, stoppedOnItsOwn } from "./Apply.js"
import { retryDelay } from "./Backoff.js"
import { OutputCollector } from "./ExecOutput.js"
import { defaultFileOperationSeconds } from "./FileTransfers.js"
import { HostCapacity } from "./HostCapacity.js"
import { MachineEnvironments } from "./MachineEnvironments.js"
import { MachinesRepo } from "./MachinesRepo.js"
import { isTerminal, type OperationRow, OperationsRepo } from "./OperationsRepo.js"
import { type Outcome } from "./Outcome.js"
import { project } from "./Projection.js"
import { type DecodedRequest, decodeRequest } from "./Requests.js"
import { fillSourceOf, SnapshotWork } from "./SnapshotWork.js"

interface Actor {
  /**
   * Set by a wake while the actor drains, cleared before each read of the mailbox and looked at
   * before the actor ends, so no wake is lost. A flag, not a queue: the actor never waits on it, and
   * making a queue per actor start ran a fiber of its own (Effect.runSync).
   */
  woken: boolean
  /** The actor's fiber, for a cancel that must end an operation which does not end by itself. */
  fiber?: Fiber.RuntimeFiber<void>
}

/** An operation being carried out, as a cancel sees it. */
interface Running {
  /** Completed by a cancel: an exec, the start queue and a retry's wait answer it at once. */
  readonly cancelled: Deferred.Deferred<void>
  /** Set before the actor is interrupted for this operation, which then settles as cancelled. */
  abandoned: boolean
  /** Set once the operation is being settled: an interrupt then no longer settles it. */
  settled: boolean
}

export interface MachineSupervisorShape {
  /** Tells the machine's actor that work was accepted (starting the actor if it sleeps). */
  readonly wake: (machineId: string) => Effect.Effect<void>
  /**
   * Cancels an operation that has not ended, so that no operation holds a machine's mailbox: a
   * pending one fails `cancelled` at once; a running exec is killed and fails `cancelled` (its
   * result says so); any other running or uncertain one ends `correlation_miss` with error_code
   * `cancelled` (its effect on the host cannot be known), within `cancelGraceSeconds`.
   */
  readonly cancel: (operation: OperationRow) => Effect.Effect<void>
  /** Cancels every open operation of the machine accepted before `operationId` (a forced stop, a delete). */
  readonly cancelAhead: (machineId: string, operationId: string) => Effect.Effect<void>
}

export class MachineSupervisor extends Context.Tag("svc/runtime/MachineSupervisor")<
  MachineSupervisor,
  MachineSupervisorShape
>() {}

/** The kinds that boot the machine, so need its environment's variables. */
const boots: ReadonlySet<string> = new Set(["create", "start", "restart", "fork", "restore"])

/**
 * Whether the operation may boot the machine when its turn comes, so must first hold a slot of the
 * host. Decided from what it asks, not from the row's `boots` (whether accepting it cost a start):
 * a start accepted while the machine was to be running anyway still boots it if the machine stopped
 * on its own meanwhile (a crash, an earlier boot that failed `no_capacity` or was cancelled). A
 * machine that still runs holds its slot already, so `tryAdmit` lets its start through at once.
 */
const needsSlot = (decoded: DecodedRequest) =>
  decoded.kind === "start" || decoded.kind === "restart" ||
  ((decoded.kind === "create" || decoded.kind === "fork" || decoded.kind === "restore") && decoded.request.start)

/** How long a cancelled operation other than an exec may still run before it is interrupted. */
export const cancelGraceSeconds = 10

/** The bus event of a machine that settled in `state`, if it has one. */
const machineEventOf = (state: MachineState | undefined) => {
  switch (state) {
    case "running":
      return "machine.ready" as const
    case "stopped":
      return "machine.stopped" as const
    case "deleted":
      return "machine.deleted" as const
    case "failed":
      return "machine.error" as const
    default:
      return undefined
  }
}

const make = Effect.gen(function*() {
  const commit = yield* GroupCommit
  const environments = yield* MachineEnvironments
  const entitlements = yield* Entitlements
  const machines = yield* MachinesRepo
  const operations = yield* OperationsRepo
  const events = yield* DomainEvents
  const outbox = yield* EventRecorders
  const driver = yield* MachineDriver
  const capacity = yield* HostCapacity
  const snapshotWork = yield* SnapshotWork
  const actors = new Map<string, Actor>()
  const cancels = new Map<string, Running>()
  const scope = yield* Effect.scope
  const { fileOperationSeconds } = yield* AppConfig
  const workers = {
    driver,
    snapshots: snapshotWork,
    fileOperationSeconds: fileOperationSeconds ?? defaultFileOperationSeconds
  }

  /**
   * Runs `job` in the group commit (one fsync shared with every other accept and actor write ready
   * at the same time). The readers that follow its operations (event streams) are woken once it is
   * committed, while its flush runs: they read what a GET would read by then, and the settle's
   * flush is not on the path of every exec's answer. The bus's subscribers get the events once the
   * flush ended: a subscriber that reads the table on an event always finds the rows, and nothing
   * acts (a webhook, a timer) on a commit that a power loss could still take back.
   */
  const persistWith =
    (how: "transaction" | "applied") => <A>(job: (published: Array<DomainEvent>) => Effect.Effect<A>) =>
      Effect.suspend(() => {
        const published: Array<DomainEvent> = []
        const all = (each: (event: DomainEvent) => Effect.Effect<void>) =>
          Effect.forEach(published, each, { discard: true })
        // The outbox (webhook deliveries, alerts) is written in the job's own transaction.
        const withOutbox = Effect.tap(job(published), () => outbox.record(published))
        return how === "transaction"
          ? Effect.tap(commit.transaction(withOutbox, () => all(events.readable)), () => all(events.deliver))
          : Effect.tap(commit.applied(withOutbox), () => all(events.publish))
      })
  const persist = persistWith("transaction")
  /**
   * For writes the work may run ahead of (GroupCommit.applied): the claim, so a command starts while
   * its claim reaches the disk, and output and progress events, so a command's output is not read
   * one fsync per chunk. The settle, committed after them, is what anyone waits for. A reader woken
   * by their events reads after the commit (the connection is the transaction's until then).
   */
  const persistAhead = persistWith("applied")

  /** Appends an operation event stamped `now` (inside a `persist` job, which read the clock once). */
  const record = (
    published: Array<DomainEvent>,
    operation: OperationRow,
    name: "status" | "output" | "progress" | "end",
    data: unknown,
    now: number
  ) =>
    Effect.map(operations.appendEvent(operation.id, name, data, now), (id) => {
      published.push({
        _tag: "OperationEvent",
        operationId: operation.id,
        machineId: operation.machine_id,
        kind: operation.kind,
        id,
        name,
        data
      })
    })

  const recordStatus = (
    published: Array<DomainEvent>,
    operation: OperationRow,
    status: OperationStatus,
    attempts: number,
    errorCode: string | null,
    now: number
  ) => record(published, operation, "status", { status, attempt_count: attempts, error_code: errorCode }, now)

  /** An event of a running operation (output, progress), in its own job. */
  const recordNow = (operation: OperationRow, name: "output" | "progress", data: unknown) =>
    persistAhead((published) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => record(published, operation, name, data, now))
    )

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

  const settle = (operation: OperationRow, attempts: number, outcome: Exclude<Outcome, { status: "uncertain" }>) =>
    persist((published) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const machinePatch = outcome.machine ?? {}
        if (outcome.status !== "correlation_miss" && outcome.also !== undefined) {
          published.push(...(yield* outcome.also))
        }
        yield* machines.update(operation.machine_id, { ...machinePatch, updated_at: now })
        const errorCode = outcome.status === "succeeded" ? null : outcome.errorCode ?? null
        const result = outcome.status === "succeeded" || outcome.status === "failed"
          ? JSON.stringify({
            exec_result: outcome.execResult ?? null,
            file_ranges: outcome.status === "succeeded" ? outcome.fileRanges ?? null : null
          })
          : null
        yield* operations.update(operation.id, {
          status: outcome.status,
          error_code: errorCode,
          completed_but_unchanged: outcome.status === "succeeded" && outcome.unchanged ? 1 : 0,
          result,
          finished_at: now
        })
        if (outcome.status !== "succeeded") yield* reproject(operation.machine_id)
        yield* recordStatus(published, operation, outcome.status, attempts, errorCode, now)
        yield* record(published, operation, "end", { status: outcome.status }, now)
        published.push({
          _tag: "OperationSettled",
          type: outcome.status === "succeeded" ? "operation.succeeded" : "operation.failed",
          operationId: operation.id,
          kind: operation.kind,
          stopReason: operation.stop_reason,
          machineId: operation.machine_id,
          organizationId: operation.organization_id
        })
        const type = machineEventOf(machinePatch.state)
        if (type !== undefined) {
          published.push({
            _tag: "MachineEvent",
            type,
            machineId: operation.machine_id,
            organizationId: operation.organization_id,
            unchanged: outcome.status === "succeeded" && outcome.unchanged
          })
        }
      })
    )

  const reproject = (machineId: string) =>
    Effect.gen(function*() {
      const machine = yield* machines.find(machineId)
      if (Option.isNone(machine)) return
      const open = yield* operations.openOps(machineId)
      yield* machines.update(machineId, { projected_state: project(machine.value.state, open) })
    })

  /**
   * A slot of the host for a boot (src/runtime/HostCapacity.ts): at once when one is free, else after
   * waiting in the start queue, whose place (`queued_at`, priority, expiry) is kept in the row.
   */
  const admission = (operation: OperationRow, cancelled: Deferred.Deferred<void>) =>
    Effect.gen(function*() {
      if (operation.queued_at === null && (yield* capacity.tryAdmit(operation.machine_id))) return "admitted" as const
      const now = yield* Clock.currentTimeMillis
      const boot = {
        operationId: operation.id,
        machineId: operation.machine_id,
        priority: operation.queue_priority ??
          ((yield* entitlements.tierOf(operation.organization_id)) === "trial" ? "trial" as const : "paid" as const),
        queuedAt: operation.queued_at ?? now,
        expiresAt: operation.queue_expires_at ?? now + capacity.queueSeconds * 1000,
        seq: operation.seq ?? 0
      }
      // Recorded once the boot holds its place, so a reader who sees it queued also finds its place.
      const recorded = operation.queued_at !== null ? Effect.void : persist(() =>
        operations.update(operation.id, {
          queued_at: boot.queuedAt,
          queue_priority: boot.priority,
          queue_expires_at: boot.expiresAt
        })
      )
      return yield* Effect.raceFirst(
        capacity.wait(boot, recorded),
        Effect.as(Deferred.await(cancelled), "cancelled" as const)
      )
    })

  /**
   * A boot that waited too long fails `no_capacity`. A machine created with `start` still gets its
   * disk and is left stopped, as if created without it, so a later start finds it whole.
   */
  const noCapacity = (operation: OperationRow, decoded: DecodedRequest) =>
    Effect.gen(function*() {
      const outcome = { status: "failed", errorCode: "no_capacity" } as const
      const machine = yield* machines.find(operation.machine_id)
      if (!(decoded.kind === "create" || decoded.kind === "fork" || decoded.kind === "restore")) return outcome
      if (Option.isNone(machine)) return outcome
      const source = fillSourceOf(decoded.kind, decoded.request)
      const filled = source !== undefined
        ? yield* Effect.either(snapshotWork.fill(source, machine.value, () => Effect.void))
        : undefined
      if (filled !== undefined && (filled._tag === "Left" || Option.isSome(filled.right))) {
        return { ...outcome, machine: { state: "failed" } as const }
      }
      const created = yield* Effect.either(driver.create(specOf(machine.value, {})))
      return { ...outcome, machine: { state: created._tag === "Right" ? "stopped" : "failed" } as const }
    })

  /**
   * A cancelled operation whose effect on the host cannot be known (it was running or being
   * retried): `correlation_miss`, "treat as not done", with error_code `cancelled`. Never `failed`,
   * which promises it did not happen.
   */
  const cancelledUnknown = { status: "correlation_miss", errorCode: "cancelled" } as const

  /** Carries one operation to a terminal status, re-applying it while the outcome is uncertain. */
  const run = (initial: OperationRow) => {
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
        const slot = yield* admission(initial, cancelled)
        if (slot === "cancelled") return
        if (slot === "expired") return yield* finish(yield* noCapacity(initial, decoded))
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
        // Only a boot reads the (sealed) environment, and only a re-applied operation has earlier output:
        // an exec, the hot path, does neither query.
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
        const release = slotted ? capacity.release(initial.machine_id) : capacity.pump
        return running?.abandoned === true && !running.settled
          ? Effect.zipRight(settle(initial, attempts, cancelledUnknown), release)
          : release
      }))
    )
  }

  /**
   * A cancelled operation that has not ended after `cancelGraceSeconds` (an exec ends at once; any
   * other kind has no cancel of its own) is abandoned: its actor is interrupted, which ends the
   * driver's work and its scoped processes, settles the operation as cancelled and starts a new
   * actor for the rest of the mailbox. Only a cancel pays for this, not every operation.
   */
  const abandonAfterGrace = (operation: OperationRow, running: Running) =>
    Effect.gen(function*() {
      yield* Effect.sleep(`${cancelGraceSeconds} seconds`)
      const actor = actors.get(operation.machine_id)
      if (cancels.get(operation.id) !== running || actor?.fiber === undefined) return
      running.abandoned = true
      yield* Fiber.interrupt(actor.fiber)
      if (actors.get(operation.machine_id) === actor) actors.delete(operation.machine_id)
      yield* wake(operation.machine_id)
    })

  /** The actor: drains the machine's open operations, then ends once nothing woke it meanwhile. */
  const actor = (machineId: string, self: Actor): Effect.Effect<void> =>
    Effect.gen(function*() {
      while (true) {
        self.woken = false
        const next = yield* operations.nextOpen(machineId)
        if (Option.isSome(next)) {
          if (!isTerminal(next.value.status)) yield* run(next.value)
          continue
        }
        // Checked and removed in one synchronous step, so a wake cannot fall between the two.
        if (self.woken) continue
        actors.delete(machineId)
        return
      }
    })

  /** A crashed actor is logged and restarted alone after a pause; other machines go on. */
  const supervised = (machineId: string, self: Actor): Effect.Effect<void> =>
    actor(machineId, self).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause) ?
          Effect.failCause(cause) :
          Effect.logError("machine actor crashed; restarting", cause).pipe(
            Effect.annotateLogs("machine_id", machineId),
            Effect.zipRight(Effect.sleep("1 second")),
            Effect.zipRight(Effect.suspend(() => supervised(machineId, self)))
          )
      )
    )

  const wake = (machineId: string) =>
    Effect.suspend(() => {
      const existing = actors.get(machineId)
      if (existing !== undefined) {
        existing.woken = true
        return Effect.void
      }
      const self: Actor = { woken: true }
      actors.set(machineId, self)
      return supervised(machineId, self).pipe(
        Effect.forkIn(scope),
        Effect.map((fiber) => void (self.fiber = fiber))
      )
    })

  // Reconcile: a machine whose sandbox ended while svc was down (a crash, a host restart) is stopped.
  for (const machine of yield* machines.running) {
    const seen = yield* Effect.either(driver.observe(machine.id))
    if (seen._tag === "Right" && !seen.right.running) {
      yield* Effect.logWarning("machine found not running; marked stopped").pipe(
        Effect.annotateLogs("machine_id", machine.id)
      )
      yield* persist(() =>
        Effect.gen(function*() {
          yield* machines.update(machine.id, { ...stoppedOnItsOwn(yield* Clock.currentTimeMillis) })
          yield* reproject(machine.id)
        })
      )
    }
  }

  // Recovery: what was running can no longer be known; re-apply it, and wake every machine with work.
  yield* operations.markInterruptedUncertain
  yield* Effect.forEach(yield* operations.machinesWithOpenWork, wake, { discard: true })

  const cancel = (operation: OperationRow) =>
    Effect.gen(function*() {
      yield* persist((published) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          if (!(yield* operations.cancelPending(operation.id, now))) return
          yield* reproject(operation.machine_id)
          yield* recordStatus(published, operation, "failed", operation.attempt_count, "cancelled", now)
          yield* record(published, operation, "end", { status: "failed" }, now)
        })
      )
      // A pending boot may wait in the start queue: its actor gives up its place.
      const running = cancels.get(operation.id)
      if (running !== undefined) {
        yield* Deferred.succeed(running.cancelled, undefined)
        yield* Effect.forkIn(abandonAfterGrace(operation, running), scope)
      }
    })

  return MachineSupervisor.of({
    wake,
    cancel,
    cancelAhead: (machineId, operationId) =>
      Effect.flatMap(
        operations.openBefore(machineId, operationId),
        (ahead) => Effect.forEach(ahead, cancel, { discard: true })
      )
  })
})

export const layer = Layer.scoped(MachineSupervisor, make)
