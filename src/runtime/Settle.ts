/**
 * The supervisor's writes: how an actor persists (in the group commit, with the outbox), the
 * operation events it records, and the settle that carries an operation to its terminal status.
 */
import { Clock, Effect, Option } from "effect"
import { type MachineState, type OperationStatus } from "../kernel/domain/MachineStates.js"
import { type DomainEvent, DomainEvents } from "../kernel/events/DomainEvents.js"
import { EventRecorders } from "../kernel/events/EventRecorders.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { HostLease } from "../kernel/sql/HostLease.js"
import { MachinesRepo } from "./MachinesRepo.js"
import { type OperationRow, OperationsRepo } from "./OperationsRepo.js"
import { type Outcome } from "./Outcome.js"
import { project } from "./Projection.js"

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

export type Settling = Effect.Effect.Success<typeof makeSettling>

export const makeSettling = Effect.gen(function*() {
  const commit = yield* GroupCommit
  const machines = yield* MachinesRepo
  const operations = yield* OperationsRepo
  const events = yield* DomainEvents
  const outbox = yield* EventRecorders
  const lease = yield* HostLease

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
        // Fenced first: a node that lost its host writes nothing more for its machines. The outbox
        // (webhook deliveries, alerts) is written in the job's own transaction.
        const withOutbox = Effect.zipRight(lease.fence, Effect.tap(job(published), () => outbox.record(published)))
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

  /** Writes the machine's projected state from its state and its open operations. */
  const reproject = (machineId: string) =>
    Effect.gen(function*() {
      const machine = yield* machines.find(machineId)
      if (Option.isNone(machine)) return
      const open = yield* operations.openOps(machineId)
      yield* machines.update(machineId, { projected_state: project(machine.value.state, open) })
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

  return { persist, persistAhead, record, recordStatus, recordNow, reproject, settle }
})
