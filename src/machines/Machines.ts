/**
 * Accepting machine changes. Each accept runs in the group commit: the idempotency check, the
 * state check against the machine's projected state, the operation row, the projected state and
 * the idempotency record are one transaction, committed before the 202 is answered. Then the
 * machine's actor is woken.
 */
import type { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { AuditLog } from "../kernel/AuditLog.js"
import { sha256 } from "../kernel/crypto/Tokens.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import {
  conflictDetail,
  conflictOf,
  MachineSize,
  makesMachine,
  type OperationKind,
  projectedAfter,
  type StopReason
} from "../kernel/domain/MachineStates.js"
import { type DomainEvent, DomainEvents } from "../kernel/events/DomainEvents.js"
import { EventRecorders } from "../kernel/events/EventRecorders.js"
import type { Accepted } from "../kernel/http/Dto.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { machineConflicts, NameTaken, RuntimeUnavailable } from "../kernel/http/MachineErrors.js"
import { paginate } from "../kernel/http/Pagination.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { canonicalJson, makeIdempotency, type Requester } from "../kernel/sql/Idempotency.js"
import { makeRowLocks } from "../kernel/sql/RowLocks.js"
import { Limits } from "../limits/Limits.js"
import { MachineEnvironments } from "../runtime/MachineEnvironments.js"
import { type MachinePatch, type MachineRow, MachinesRepo } from "../runtime/MachinesRepo.js"
import { MachineSupervisor } from "../runtime/MachineSupervisor.js"
import { OperationsRepo } from "../runtime/OperationsRepo.js"
import { makePlacement } from "../runtime/Placement.js"
import type { StoredRequestOf } from "../runtime/Requests.js"

/**
 * Where a new machine's disk comes from when it is not empty: a fork, a restore, or a template
 * (src/snapshots/Snapshots.ts). `resolve` runs inside the accept's transaction, after the
 * idempotency check: it checks the source and answers what the operation's request carries.
 */
export interface Origin<E> {
  readonly kind: "create" | "fork" | "restore"
  /** What a repeated idempotency key is compared with: the route and its body. */
  readonly fingerprint: string
  readonly resolve: Effect.Effect<
    {
      readonly source: { readonly kind: string; readonly id: string }
      readonly request: StoredRequestOf<"create">
      /** The host the new disk must be on (a fork's source; src/runtime/Placement.ts). */
      readonly host?: string | null
    },
    E
  >
}

/** Runs inside a change's transaction, after its checks (a snapshot's row and its limits). */
export type Within<E> = (accepted: {
  readonly operationId: string
  readonly machine: MachineRow
  readonly now: number
}) => Effect.Effect<void, E>

/** A new machine's settings: what `POST /v1/machines` carries once its defaults are applied. */
export interface NewMachine {
  readonly name: string
  readonly size: MachineSize
  readonly image: string
  readonly environment_id: string | null
  readonly internet_access: boolean
  readonly auto_stop_seconds: number | null
  readonly idle_sleep_seconds: number | null
  readonly setup_script: string | null
  readonly template: string | null
  readonly start: boolean
  /** The host asked for (`host`); absent: placement chooses (src/runtime/Placement.ts). */
  readonly host?: string | null | undefined
}

/** The changes of a machine's life the audit log records (create, fork and restore: `create`). */
const lifecycle = new Set<OperationKind>(["start", "stop", "restart", "delete"])

const make = Effect.gen(function*() {
  const commit = yield* GroupCommit
  const machines = yield* MachinesRepo
  const operations = yield* OperationsRepo
  const idempotency = yield* makeIdempotency
  const locks = yield* makeRowLocks
  const supervisor = yield* MachineSupervisor
  const limits = yield* Limits
  const environments = yield* MachineEnvironments
  const driver = yield* MachineDriver
  const placement = yield* makePlacement
  /** Refuses before anything is recorded when this host cannot run machines (retry with the same key). */
  const runtimeReady = Effect.suspend(() =>
    driver.unavailable === undefined
      ? Effect.void
      : Effect.fail(new RuntimeUnavailable({ detail: `Machines cannot run on this server now: ${driver.unavailable}` }))
  )
  const bus = yield* DomainEvents
  const outbox = yield* EventRecorders
  const audit = yield* AuditLog

  /**
   * A lifecycle change's audit row, written in its accept's transaction: who asked (svc itself
   * when a timer, billing, a suspension or an abuse check stops it), what, on which machine.
   */
  const audited = (
    requester: Requester,
    action: string,
    machineId: string,
    detail: Record<string, unknown>,
    reason: string | null = null
  ) => {
    const system = requester.system ?? (reason !== null && reason !== "api" ? reason : undefined)
    return audit.record({
      actor: system ?? requester.userId,
      actorKind: system === undefined ? "user" : "system",
      action,
      organizationId: requester.organizationId,
      reason: reason === "api" ? null : reason,
      detail: { machine_id: machineId, ...detail }
    })
  }

  const accepted = (operationId: string, machineId: string, kind: string): Accepted => ({
    operation_id: operationId,
    machine_id: machineId,
    requested_action: kind
  })

  /** The original answer for a repeated key, a conflict for a different request, or none. */
  const replay = (requester: Requester, fingerprint: string) =>
    requester.idempotencyKey === undefined ? Effect.succeedNone : Effect.gen(function*() {
      const found = yield* idempotency.previous(requester, fingerprint)
      const operationId = Option.flatMapNullable(found, (key) => key.operation_id)
      if (Option.isNone(operationId)) return Option.none<Accepted>()
      const original = yield* operations.find(operationId.value)
      return Option.map(original, (row) => accepted(row.id, row.machine_id, row.kind))
    })

  const record = (
    requester: Requester,
    fingerprint: string,
    operation: { id: string; machineId: string; kind: OperationKind; request: unknown; boots: boolean },
    now: number
  ) =>
    Effect.gen(function*() {
      yield* operations.insert({
        id: operation.id,
        organization_id: requester.organizationId,
        machine_id: operation.machineId,
        requested_by: requester.userId,
        kind: operation.kind,
        request: canonicalJson(operation.request),
        status: "pending",
        attempt_count: 0,
        error_code: null,
        completed_but_unchanged: 0,
        stop_reason: operation.kind === "stop" ? (operation.request as { stop_reason: string }).stop_reason : null,
        queued_at: null,
        queue_priority: null,
        queue_expires_at: null,
        result: null,
        boots: operation.boots ? 1 : 0,
        created_at: now,
        started_at: null,
        finished_at: null
      })
      yield* idempotency.record(requester, fingerprint, { operation_id: operation.id }, now)
      yield* operations.appendEvent(
        operation.id,
        "status",
        { status: "pending", attempt_count: 0, error_code: null },
        now
      )
    })

  /**
   * Commits the accept. A new operation's actor is woken as soon as the commit is written, while the
   * flush that the 202 waits for runs: the operation may start a moment before its acceptance is on
   * disk, never before it is readable, and nobody is told of it before. The bus hears of a new
   * machine once the accept is on disk.
   */
  const createdEvent = (answer: Accepted, organizationId: string): DomainEvent | undefined =>
    makesMachine(answer.requested_action as OperationKind)
      ? { _tag: "MachineEvent", type: "machine.created", machineId: answer.machine_id, organizationId }
      : undefined

  const afterCommit = <E>(
    effect: Effect.Effect<{ answer: Accepted; fresh: boolean }, E, SqlClient.SqlClient>,
    organizationId: string
  ) =>
    Effect.tap(
      commit.transaction(
        // The outbox (webhook deliveries, alerts) of machine.created is written with the accept.
        Effect.tap(effect, ({ answer, fresh }) => {
          const created = fresh ? createdEvent(answer, organizationId) : undefined
          return created === undefined ? Effect.void : outbox.record([created])
        }),
        ({ answer, fresh }) => fresh ? supervisor.wake(answer.machine_id) : Effect.void
      ),
      ({ answer, fresh }) => {
        const created = fresh ? createdEvent(answer, organizationId) : undefined
        return created === undefined ? Effect.void : bus.publish(created)
      }
    ).pipe(Effect.map(({ answer }) => answer))

  const service = {
    create: <E = never>(requester: Requester, body: NewMachine, origin?: Origin<E>) => {
      const fingerprint = origin?.fingerprint ?? sha256(`POST /v1/machines ${canonicalJson(body)}`)
      const kind = origin?.kind ?? "create"
      return afterCommit(
        Effect.gen(function*() {
          const again = yield* replay(requester, fingerprint)
          if (Option.isSome(again)) return { answer: again.value, fresh: false }
          yield* runtimeReady
          // Another node's create in the organization commits first: its name and its slot count.
          yield* locks.row("organizations", requester.organizationId)
          if (yield* machines.liveNameTaken(requester.organizationId, body.name, null)) {
            return yield* new NameTaken({ detail: `A live machine is already named ${body.name}` })
          }
          const environment = body.environment_id === null
            ? Option.none()
            : yield* environments.current(requester.organizationId, body.environment_id.toLowerCase())
          if (body.environment_id !== null && Option.isNone(environment)) {
            return yield* new ResourceNotFound({ detail: "Environment not found" })
          }
          yield* limits.checkAccept(requester.organizationId, requester.userId, null, {
            size: body.size,
            boots: body.start
          })
          const resolved = origin === undefined ? undefined : yield* origin.resolve
          // Last of the accept's locks: racing creates on other nodes see this one's machine.
          const hostId = yield* placement.place(body.host ?? null, resolved?.host ?? null)
          const now = yield* Clock.currentTimeMillis
          const machineId = uuidv7()
          const operationId = uuidv7()
          const row: MachineRow = {
            id: machineId,
            organization_id: requester.organizationId,
            created_by: requester.userId,
            name: body.name,
            state: "creating",
            projected_state: body.start ? "running" : "stopped",
            size: body.size,
            image: body.image,
            environment_id: Option.getOrNull(Option.map(environment, (e) => e.id)),
            environment_version: Option.getOrNull(Option.map(environment, (e) => e.version)),
            internet_access: body.internet_access ? 1 : 0,
            auto_stop_seconds: body.auto_stop_seconds,
            idle_sleep_seconds: body.idle_sleep_seconds,
            setup_script: body.setup_script,
            boot_id: null,
            last_stop_reason: null,
            source_kind: resolved?.source.kind ?? "empty",
            source_id: resolved?.source.id ?? null,
            created_at: now,
            updated_at: now,
            started_at: null,
            stopped_at: null,
            deleted_at: null,
            last_activity_at: null,
            ports: "[]",
            host_id: hostId
          }
          yield* machines.insert(row)
          yield* record(requester, fingerprint, {
            id: operationId,
            machineId,
            kind,
            request: resolved?.request ?? body,
            boots: body.start
          }, now)
          yield* audited(requester, `machine.${kind}`, machineId, {
            operation_id: operationId,
            name: body.name,
            size: body.size,
            ...(resolved === undefined ? {} : { source: resolved.source })
          })
          return { answer: accepted(operationId, machineId, kind), fresh: true }
        }),
        requester.organizationId
      )
    },

    /** Accepts `kind` on the organization's machine `machineId`. */
    change: <K extends Exclude<OperationKind, "create">, E = never>(
      requester: Requester,
      machineId: string,
      kind: K,
      request: StoredRequestOf<K>,
      within?: Within<E>
    ) => {
      // Only a key is ever compared with it (`replay`, `record`): without one, nothing to hash.
      const fingerprint = requester.idempotencyKey === undefined
        ? ""
        : sha256(`${kind} ${machineId} ${canonicalJson(request)}`)
      return afterCommit(
        Effect.gen(function*() {
          const again = yield* replay(requester, fingerprint)
          if (Option.isSome(again)) return { answer: again.value, fresh: false }
          yield* runtimeReady
          // Another node's accept on this machine commits first: its projected state is the one checked.
          yield* locks.row("machines", machineId)
          const found = yield* machines.findIn(requester.organizationId, machineId)
          if (Option.isNone(found)) return yield* new ResourceNotFound({ detail: "Machine not found" })
          const machine = found.value
          const conflict = conflictOf(kind, machine.projected_state)
          if (conflict !== undefined) {
            return yield* new machineConflicts[conflict]({
              detail: conflictDetail(kind, conflict, machine.state, machine.projected_state)
            })
          }
          // Starting a machine that will be running anyway boots nothing and costs no start.
          const boots = kind === "restart" || (kind === "start" && machine.projected_state !== "running")
          if (boots) {
            yield* limits.checkAccept(requester.organizationId, requester.userId, machine, {
              size: machine.size,
              boots
            })
          }
          const now = yield* Clock.currentTimeMillis
          const operationId = uuidv7()
          if (within !== undefined) yield* within({ operationId, machine, now })
          yield* record(requester, fingerprint, { id: operationId, machineId, kind, request, boots }, now)
          // A stop's fields, read as optional from any lifecycle kind's request.
          const stopping = request as { readonly stop_reason?: unknown; readonly force?: unknown }
          if (lifecycle.has(kind)) {
            const reason = typeof stopping.stop_reason === "string" ? stopping.stop_reason : null
            yield* audited(requester, `machine.${kind}`, machineId, {
              operation_id: operationId,
              ...(stopping.force === true ? { force: true } : {})
            }, reason)
          }
          const projected = projectedAfter(kind, machine.projected_state)
          if (projected !== machine.projected_state) yield* machines.update(machineId, { projected_state: projected })
          return { answer: accepted(operationId, machineId, kind), fresh: true }
        }),
        requester.organizationId
      ).pipe(
        // A forced stop or a delete does not wait behind what the machine has queued or is stuck on:
        // what was accepted before it is cancelled (the operations say so), so it runs next.
        Effect.tap((answer) =>
          kind === "delete" || (kind === "stop" && (request as { readonly force?: unknown }).force === true)
            ? supervisor.cancelAhead(machineId, answer.operation_id)
            : Effect.void
        )
      )
    },

    /** A page of the organization's machines in creation order, optionally of one state. */
    page: (organizationId: string, limit: number, cursor: string | null, state: string | null) =>
      paginate(limit, (limit) => machines.page(organizationId, { limit, after: cursor, state }), (row) => row.id),
    find: (organizationId: string, machineId: string) =>
      Effect.flatMap(machines.findIn(organizationId, machineId), (found) =>
        Option.match(found, {
          onNone: () => Effect.fail(new ResourceNotFound({ detail: "Machine not found" })),
          onSome: Effect.succeed
        })),

    /** Changes the settings a PATCH may change; `by` is who asked (the audit log's actor). */
    patch: (requester: Requester, machineId: string, patch: MachinePatch) =>
      Effect.gen(function*() {
        const organizationId = requester.organizationId
        const found = yield* machines.findIn(organizationId, machineId)
        if (Option.isNone(found)) return yield* new ResourceNotFound({ detail: "Machine not found" })
        if (found.value.state === "deleted") {
          return yield* new machineConflicts.machine_deleted({
            detail: "The machine was deleted; its settings can no longer change."
          })
        }
        if (patch.name !== undefined && (yield* machines.liveNameTaken(organizationId, patch.name, machineId))) {
          return yield* new NameTaken({ detail: `A live machine is already named ${patch.name}` })
        }
        const now = yield* Clock.currentTimeMillis
        yield* commit.transaction(
          Effect.zipRight(
            machines.update(machineId, { ...patch, updated_at: now }),
            audited(requester, "machine.change", machineId, { changed: patch })
          )
        )
        yield* bus.publish({ _tag: "MachineSettingsChanged", machineId })
        return { ...found.value, ...patch, updated_at: now } as MachineRow
      })
  }

  return {
    ...service,
    /** Live machines that use the environment, with the version each is on. */
    usingEnvironment: machines.usingEnvironment,
    /** The organizations with a machine that runs or will (billing stops those of exhausted ones). */
    organizationsRunning: machines.organizationsRunning,
    /**
     * Force-stops every machine of the organization that is or will be running, with `reason`
     * (billing, suspension, abuse): what each had queued is cancelled, its execs and turns end. The
     * key names the boot, so a repeat, or a restart of svc half-way, stops no boot twice.
     * Answers how many stops were accepted.
     */
    stopAll: (organizationId: string, reason: StopReason) =>
      Effect.flatMap(
        machines.headedForRunning(organizationId),
        (running) =>
          Effect.reduce(running, 0, (stopped, machine) =>
            service.change(
              {
                organizationId,
                userId: machine.created_by,
                idempotencyKey: `${reason}:${machine.id}:${machine.boot_id ?? "none"}`
              },
              machine.id,
              "stop",
              { force: true, stop_reason: reason }
            ).pipe(
              Effect.as(stopped + 1),
              // Stopped or deleted meanwhile: nothing left to stop.
              Effect.catchAll(() => Effect.succeed(stopped))
            ))
      )
  }
})

export class Machines extends Context.Tag("svc/machines/Machines")<Machines, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Machines, make)
}
