import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import type { OperationKind, OperationStatus } from "../kernel/domain/MachineStates.js"
import { OpenOperations } from "../kernel/sql/IdempotencySweep.js"
import { Prepared } from "../kernel/sql/Sqlite.js"

export const terminalStatuses: ReadonlyArray<OperationStatus> = ["succeeded", "failed", "correlation_miss"]
export const isTerminal = (status: OperationStatus) => terminalStatuses.includes(status)

export interface OperationRow {
  readonly seq?: number
  readonly id: string
  readonly organization_id: string
  readonly machine_id: string
  /** The member who asked for it (the stop timers and forced stops act as the machine's creator); null before 0018. */
  readonly requested_by: string | null
  readonly kind: OperationKind
  /** The decoded request as canonical JSON; re-applied as is after a crash. */
  readonly request: string
  readonly status: OperationStatus
  readonly attempt_count: number
  readonly error_code: string | null
  readonly completed_but_unchanged: number
  readonly stop_reason: string | null
  /** `{exec_result}` or `{file_ranges}` as JSON. */
  readonly result: string | null
  /**
   * 1 when accepting it cost a start (counted by the starts limit). Whether it really boots, and so
   * waits for a slot of the host, is decided at its turn (src/runtime/MachineSupervisor.ts).
   */
  readonly boots: number
  /** Set while (and after) a boot waited in the host's start queue (src/runtime/HostCapacity.ts). */
  readonly queued_at: number | null
  readonly queue_priority: "paid" | "trial" | null
  readonly queue_expires_at: number | null
  readonly created_at: number
  readonly started_at: number | null
  readonly finished_at: number | null
}

export interface EventRow {
  readonly id: number
  readonly operation_id: string
  readonly name: string
  readonly data: string
  readonly created_at: number
}

export type OperationPatch = Partial<
  Pick<
    OperationRow,
    | "status"
    | "attempt_count"
    | "error_code"
    | "completed_but_unchanged"
    | "result"
    | "started_at"
    | "finished_at"
    | "queued_at"
    | "queue_priority"
    | "queue_expires_at"
  >
>

/** The statuses of an operation still to be carried out (the partial indexes' condition, verbatim). */
const openStatus = "status IN ('pending', 'running', 'uncertain')"

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // What every accept and every operation's run does is prepared (src/kernel/sql/Sqlite.ts).
  const prepared = yield* Prepared
  return {
    insert: (row: OperationRow) => prepared.insert("operations", row),
    /** Boots the organization accepted since `since` (the starts-per-hour limit). */
    bootsSince: (organizationId: string, since: number) =>
      sql<{ n: number }>`SELECT COUNT(*) AS n FROM operations WHERE organization_id = ${organizationId}
        AND boots = 1 AND created_at > ${since}`.pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), Effect.orDie),
    find: (id: string) => prepared.first<OperationRow>("SELECT * FROM operations WHERE id = ?", id),
    findIn: (organizationId: string, id: string) =>
      prepared.first<OperationRow>("SELECT * FROM operations WHERE id = ? AND organization_id = ?", id, organizationId),
    /** The machine's next operation to carry out, in acceptance order. */
    nextOpen: (machineId: string) =>
      prepared.first<OperationRow>(
        `SELECT * FROM operations WHERE machine_id = ? AND ${openStatus} ORDER BY seq LIMIT 1`,
        machineId
      ),
    /** The machine's open operations accepted before `operationId`, in order. */
    openBefore: (machineId: string, operationId: string) =>
      prepared.all<OperationRow>(
        `SELECT * FROM operations WHERE machine_id = ? AND ${openStatus}
          AND seq < (SELECT seq FROM operations WHERE id = ?) ORDER BY seq`,
        machineId,
        operationId
      ),
    /** The kinds still to run on the machine, in order (for the projected state). */
    openOps: (machineId: string) =>
      prepared.all<{ kind: OperationKind; request: string }>(
        `SELECT kind, request FROM operations WHERE machine_id = ? AND ${openStatus} ORDER BY seq`,
        machineId
      ),
    /** Newest first; `before` is the seq of the last item of the previous page. */
    pageForMachine: (machineId: string, options: { limit: number; before: number | null }) =>
      sql<OperationRow>`SELECT * FROM operations WHERE machine_id = ${machineId}
        ${options.before === null ? sql`` : sql`AND seq < ${options.before}`}
        ORDER BY seq DESC LIMIT ${options.limit}`.pipe(Effect.orDie),
    /** How many operations of each kind are in each status (for /metrics). */
    countsByKindAndStatus: sql<{ kind: string; status: string; n: number }>`SELECT kind, status, COUNT(*) AS n
      FROM operations GROUP BY kind, status`.pipe(Effect.orDie),
    /** Open operations per machine with any (the mailboxes' depths, for /metrics). */
    openPerMachine: sql<{ n: number }>`SELECT COUNT(*) AS n FROM operations
      WHERE status IN ('pending', 'running', 'uncertain') GROUP BY machine_id`.pipe(
      Effect.map((rows) => rows.map((row) => Number(row.n))),
      Effect.orDie
    ),
    /** Machines with work left, for recovery at start. */
    /** The ids of the operations not yet settled (the idempotency sweep keeps their keys). */
    openIds: sql<{ id: string }>`SELECT id FROM operations WHERE status IN ('pending', 'running', 'uncertain')`.pipe(
      Effect.map((rows) => rows.map((row) => row.id)),
      Effect.orDie
    ),
    machinesWithOpenWork: (hostId: string) =>
      sql<{ machine_id: string }>`SELECT DISTINCT o.machine_id FROM operations o
        JOIN machines m ON m.id = o.machine_id
        WHERE o.status IN ('pending', 'running', 'uncertain') AND m.host_id = ${hostId}`.pipe(
        Effect.map((rows) => rows.map((row) => row.machine_id)),
        Effect.orDie
      ),
    /**
     * What was running on the host when its node stopped can no longer be known: it becomes
     * uncertain. Another host's operations are its own node's.
     */
    markInterruptedUncertain: (hostId: string) =>
      sql`UPDATE operations SET status = 'uncertain' WHERE status = 'running'
        AND machine_id IN (SELECT id FROM machines WHERE host_id = ${hostId})`.pipe(Effect.orDie),
    /** Marks the operation running unless it was settled meanwhile (a cancel); false then. */
    claim: (id: string, attempts: number, now: number) =>
      Effect.map(
        prepared.run(
          `UPDATE operations SET status = 'running', attempt_count = ?, started_at = COALESCE(started_at, ?)
            WHERE id = ? AND ${openStatus}`,
          attempts,
          now,
          id
        ),
        (changed) => changed > 0
      ),
    /** Settles a pending operation as cancelled; false when it already left `pending`. */
    cancelPending: (id: string, now: number) =>
      Effect.map(
        prepared.run(
          `UPDATE operations SET status = 'failed', error_code = 'cancelled', finished_at = ?
            WHERE id = ? AND status = 'pending'`,
          now,
          id
        ),
        (changed) => changed > 0
      ),
    update: (id: string, patch: OperationPatch) => prepared.updateById("operations", id, patch),
    // Events
    appendEvent: (operationId: string, name: string, data: unknown, now: number) =>
      Effect.map(
        prepared.all<{ id: number }>(
          "INSERT INTO operation_events (operation_id, name, data, created_at) VALUES (?, ?, ?, ?) RETURNING id",
          operationId,
          name,
          JSON.stringify(data),
          now
        ),
        (rows) => Number(rows[0]!.id)
      ),
    eventsAfter: (operationId: string, after: number) =>
      prepared.all<EventRow>(
        "SELECT * FROM operation_events WHERE operation_id = ? AND id > ? ORDER BY id",
        operationId,
        after
      ),
    outputOf: (operationId: string) =>
      prepared.all<EventRow>(
        "SELECT * FROM operation_events WHERE operation_id = ? AND name = 'output' ORDER BY id",
        operationId
      )
  }
})

export class OperationsRepo extends Context.Tag("svc/runtime/OperationsRepo")<
  OperationsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(OperationsRepo, make)
}

/** The engine's answer to the idempotency sweep (kernel/sql/IdempotencySweep.ts). */
export const OpenOperationsLive = Layer.effect(OpenOperations, Effect.map(OperationsRepo, (repo) => repo.openIds))
