/**
 * Snapshots and templates as the product shows them (api.md "Snapshots and templates"): accepting
 * pushes, template saves, forks, restores and machines made from templates (each an operation,
 * accepted through Machines in one transaction with its snapshot row), reading and deleting rows.
 * The store behind them (src/snapshots) is collected after deletes and at start. A row whose
 * operation ended without settling it (a cancel, a conflict at its turn) is settled from the
 * operation when its `end` event passes, and at start.
 */
import { Clock, Context, Effect, Layer, Option, Queue } from "effect"
import { AppConfig, defaultSnapshotSettings } from "../kernel/config/AppConfig.js"
import { sha256 } from "../kernel/crypto/Tokens.js"
import { uuidPattern, uuidv7 } from "../kernel/domain/Ids.js"
import { conflictDetail, conflictOf } from "../kernel/domain/MachineStates.js"
import { type DomainEvent, DomainEvents } from "../kernel/events/DomainEvents.js"
import { EventRecorders } from "../kernel/events/EventRecorders.js"
import type { Accepted } from "../kernel/http/Dto.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { machineConflicts } from "../kernel/http/MachineErrors.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { canonicalJson, type Requester } from "../kernel/sql/Idempotency.js"
import { makeRowLocks } from "../kernel/sql/RowLocks.js"
import { Machines, type NewMachine, type Origin } from "../machines/Machines.js"
import { EngineReads, isTerminal, type MachineRow } from "../runtime/EngineReads.js"
import { SnapshotWork } from "../runtime/SnapshotWork.js"
import { NoSnapshot, SnapshotLimitReached, SnapshotPending, TemplateLimitReached, TemplateNameTaken } from "./Errors.js"
import { makeRemoval } from "./Removal.js"
import { readyPatch } from "./store/Manifest.js"
import { type SnapshotRow, SnapshotsRepo } from "./store/SnapshotsRepo.js"
import { SnapshotStore } from "./store/SnapshotStore.js"

/** An accepted push or template save, with the snapshot row it made. */
export interface SnapshotAccepted {
  readonly accepted: Accepted
  readonly snapshot: SnapshotRow
}

/** The settings a fork or a restore copies from its source machine. */
const settingsOf = (machine: MachineRow, name: string, start: boolean): NewMachine => ({
  name,
  size: machine.size,
  image: machine.image,
  environment_id: machine.environment_id,
  internet_access: machine.internet_access === 1,
  auto_stop_seconds: machine.auto_stop_seconds,
  idle_sleep_seconds: machine.idle_sleep_seconds,
  setup_script: null,
  template: null,
  start
})

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const limits = config.snapshots ?? defaultSnapshotSettings
  const machines = yield* Machines
  const { machines: machineRows, operations } = yield* EngineReads
  const snapshots = yield* SnapshotsRepo
  const commit = yield* GroupCommit
  const locks = yield* makeRowLocks
  const outbox = yield* EventRecorders
  const work = yield* SnapshotWork
  const store = yield* SnapshotStore
  const bus = yield* DomainEvents
  const { deleteOne, deleteSome, removeRows, requestCollection } = yield* makeRemoval

  /**
   * Settles a pending row from its terminal operation (ready only when its manifest is in the
   * store), with its `snapshot.*` event in the outbox of the same transaction.
   */
  const settleFromOperation = (operationId: string) =>
    Effect.gen(function*() {
      const row = yield* snapshots.findByOperation(operationId)
      if (Option.isNone(row) || row.value.status !== "pending") return
      const operation = yield* operations.find(operationId)
      if (Option.isSome(operation) && !isTerminal(operation.value.status)) return
      const now = yield* Clock.currentTimeMillis
      const stored = Option.isSome(operation) && operation.value.status === "succeeded"
        ? yield* Effect.promise(() => store.read(row.value.id).catch(() => undefined))
        : undefined
      const code = Option.isSome(operation) ? operation.value.error_code ?? "snapshot_failed" : "snapshot_failed"
      const published = yield* commit.transaction(Effect.gen(function*() {
        // Read again inside the transaction: the actor's settle may have settled it meanwhile.
        const again = yield* snapshots.find(row.value.id)
        if (Option.isNone(again) || again.value.status !== "pending") return []
        const events = yield* work.settledEvent(
          row.value.id,
          snapshots.settle(
            row.value.id,
            stored !== undefined
              ? readyPatch(stored.summary, now)
              : { status: "failed", error_code: code, completed_at: now }
          )
        )
        yield* outbox.record(events)
        return events
      }))
      yield* Effect.forEach(published, bus.deliver, { discard: true })
    })

  // At start: rows whose operation ended while svc was down (the store was collected when opened).
  for (const row of yield* snapshots.pending) yield* settleFromOperation(row.operation_id)

  /**
   * Automatic snapshots: a stop for `auto_stop` or `idle_sleep` of a machine with
   * `auto_snapshot_keep` set is followed by a push (`source` automatic; its idempotency key is
   * derived from the stop, so it is asked once); once one is ready, the machine's automatic
   * snapshots beyond the newest N are deleted (failed ones too).
   */
  const automatic = (operationId: string) =>
    Effect.gen(function*() {
      const operation = yield* operations.find(operationId)
      if (Option.isNone(operation) || operation.value.status !== "succeeded") return
      const machine = yield* machineRows.find(operation.value.machine_id)
      if (Option.isNone(machine) || machine.value.auto_snapshot_keep == null) return
      const keep = machine.value.auto_snapshot_keep
      const { kind, stop_reason } = operation.value
      if (kind === "stop" && (stop_reason === "auto_stop" || stop_reason === "idle_sleep")) {
        const requester = {
          organizationId: machine.value.organization_id,
          userId: machine.value.created_by,
          idempotencyKey: `auto-snapshot:${operationId}`
        }
        yield* push(requester, machine.value.id, "warm", "automatic").pipe(
          Effect.catchAll((error) =>
            Effect.logWarning("automatic snapshot not taken").pipe(
              Effect.annotateLogs({ machine_id: machine.value.id, reason: error._tag })
            )
          )
        )
      }
      if (kind === "snapshot") {
        const rows = yield* snapshots.ofMachine(machine.value.id, "automatic")
        const ready = rows.filter((row) => row.status === "ready")
        const excess = [
          ...rows.filter((row) => row.status === "failed"),
          ...ready.slice(0, Math.max(0, ready.length - keep))
        ]
        yield* removeRows(excess)
      }
    })

  const acceptedOf = (accepted: Accepted) =>
    Effect.map(
      snapshots.findByOperation(accepted.operation_id),
      (row): SnapshotAccepted => ({ accepted, snapshot: Option.getOrThrow(row) })
    )

  const newRow = (
    requester: Requester,
    accepted: { operationId: string; machine: MachineRow; now: number },
    fields: Pick<SnapshotRow, "name" | "tier" | "source">
  ): SnapshotRow => ({
    id: uuidv7(),
    organization_id: requester.organizationId,
    machine_id: accepted.machine.id,
    operation_id: accepted.operationId,
    status: "pending",
    size_bytes: 0,
    uploaded_bytes: 0,
    generation: 0,
    disk_synced: 0,
    manifest: null,
    parent_manifest: null,
    error_code: null,
    created_at: accepted.now,
    completed_at: null,
    // The push runs on the machine's host: its store is where the manifest and chunks will be.
    host_id: accepted.machine.host_id ?? null,
    ...fields
  })

  const findIn = (organizationId: string, id: string) =>
    Effect.flatMap(snapshots.findIn(organizationId, id), (found) =>
      Option.match(found, {
        onNone: () => Effect.fail(new ResourceNotFound({ detail: "Snapshot not found" })),
        onSome: Effect.succeed
      }))

  /** A template of the organization by id or name. */
  const templateIn = (organizationId: string, template: string) =>
    Effect.gen(function*() {
      const byId = uuidPattern.test(template)
        ? yield* snapshots.findIn(organizationId, template.toLowerCase())
        : Option.none<SnapshotRow>()
      const found = Option.isSome(byId) ? byId : yield* snapshots.findTemplate(organizationId, template)
      if (Option.isNone(found) || found.value.name === null) {
        return yield* new ResourceNotFound({ detail: "Template not found" })
      }
      return found.value
    })

  const push = (requester: Requester, machineId: string, tier: "warm" | "cold", source: "api" | "automatic") =>
    Effect.flatMap(
      machines.change(requester, machineId, "snapshot", { tier, source }, (accepted) =>
        Effect.gen(function*() {
          if ((yield* snapshots.countForMachine(machineId)) >= limits.perMachine) {
            return yield* new SnapshotLimitReached({
              detail: `A machine holds at most ${limits.perMachine} snapshots; delete some first`
            })
          }
          yield* snapshots.insert(newRow(requester, accepted, { name: null, tier, source }))
        })),
      acceptedOf
    )

  /**
   * A fork or a restore: a new machine with its source machine's settings, accepted through
   * Machines.create with the route and body as fingerprint; `resolve` checks the source inside the accept.
   */
  const createFrom = <E>(
    requester: Requester,
    machineId: string,
    kind: "fork" | "restore",
    body: { name: string; start: boolean },
    resolve: (machine: MachineRow, settings: NewMachine) => Origin<E>["resolve"]
  ) =>
    Effect.gen(function*() {
      const machine = yield* machines.find(requester.organizationId, machineId)
      const settings = settingsOf(machine, body.name, body.start)
      return yield* machines.create(requester, settings, {
        kind,
        fingerprint: sha256(`POST /v1/machines/${machine.id}/${kind} ${canonicalJson(body)}`),
        resolve: resolve(machine, settings)
      })
    })

  /**
   * Only a snapshot's own end settles its row; only a stop or a snapshot can call for automatic
   * snapshots or their pruning. Every other event costs no read.
   */
  type FollowedEvent = DomainEvent & { readonly _tag: "OperationEvent" }
  const follows = (event: DomainEvent): event is FollowedEvent =>
    event._tag === "OperationEvent" && event.name === "end" && (event.kind === "snapshot" || event.kind === "stop")
  const bookkeeping = (event: FollowedEvent) =>
    (event.kind === "snapshot"
      ? Effect.zipRight(settleFromOperation(event.operationId), automatic(event.operationId))
      : automatic(event.operationId)).pipe(
        Effect.catchAllCause((cause) => Effect.logError("snapshot bookkeeping failed", cause))
      )

  // Subscribed last: a handler may use everything above. The bus hands over only the events that
  // `follows` accepts; the ones published together are handled in one wake.
  const events = yield* bus.subscribe(follows)
  yield* Queue.takeBetween(events, 1, Number.POSITIVE_INFINITY).pipe(
    Effect.flatMap((batch) => Effect.forEach(batch, bookkeeping, { discard: true })),
    Effect.forever,
    Effect.forkScoped
  )

  return {
    push: (requester: Requester, machineId: string, tier: "warm" | "cold") => push(requester, machineId, tier, "api"),

    saveTemplate: (requester: Requester, machineId: string, name: string) =>
      Effect.flatMap(
        machines.change(requester, machineId, "snapshot", { tier: "warm", template: name }, (accepted) =>
          Effect.gen(function*() {
            // Another node's template in the organization commits first (its name, its count).
            yield* locks.row("organizations", requester.organizationId)
            const taken = yield* snapshots.findTemplate(requester.organizationId, name)
            if (Option.isSome(taken) && taken.value.status !== "failed") {
              return yield* new TemplateNameTaken({ detail: `A template is already named ${name}` })
            }
            if ((yield* snapshots.countTemplates(requester.organizationId)) >= limits.templatesPerOrganization) {
              return yield* new TemplateLimitReached({
                detail: `An organization holds at most ${limits.templatesPerOrganization} templates`
              })
            }
            yield* snapshots.insert(newRow(requester, accepted, { name, tier: "warm", source: null }))
          })),
        acceptedOf
      ),

    fork: (requester: Requester, sourceId: string, body: { name: string; start: boolean }) =>
      createFrom(requester, sourceId, "fork", body, (source, settings) =>
        Effect.gen(function*() {
          const now = yield* machines.find(requester.organizationId, source.id)
          const conflict = conflictOf("fork", now.projected_state)
          if (conflict !== undefined) {
            return yield* new machineConflicts[conflict]({
              detail: `Fork of the source machine: ${conflictDetail("fork", conflict, now.state, now.projected_state)}`
            })
          }
          return {
            source: { kind: "fork", id: source.id },
            request: { ...settings, source_machine_id: source.id },
            // A fork copies the source's disk where it is.
            host: now.host_id ?? null
          }
        })),

    restore: (
      requester: Requester,
      machineId: string,
      body: { name: string; snapshot_id: string | null; start: boolean }
    ) =>
      createFrom(requester, machineId, "restore", body, (machine, settings) =>
        Effect.gen(function*() {
          const found = body.snapshot_id === null
            ? yield* snapshots.latestReady(machine.id)
            : yield* snapshots.findIn(requester.organizationId, body.snapshot_id.toLowerCase())
          if (body.snapshot_id !== null && (Option.isNone(found) || found.value.machine_id !== machine.id)) {
            return yield* new ResourceNotFound({ detail: "Snapshot not found for this machine" })
          }
          if (Option.isNone(found) || found.value.status === "failed") {
            return yield* new NoSnapshot({ detail: "The machine has no ready snapshot to restore" })
          }
          if (found.value.status === "pending") {
            return yield* new SnapshotPending({ detail: "The snapshot has not settled yet" })
          }
          return {
            source: { kind: "snapshot", id: found.value.id },
            // Any host: placement chooses, and the missing chunks are copied from the snapshot's
            // holder (src/runtime/SnapshotWork.ts).
            request: { ...settings, snapshot_id: found.value.id }
          }
        })),

    /** `POST /v1/machines` with `template`: a new machine whose disk is the template's. */
    createFromTemplate: (requester: Requester, body: NewMachine & { readonly template: string }) =>
      machines.create(requester, body, {
        kind: "create",
        fingerprint: sha256(`POST /v1/machines ${canonicalJson(body)}`),
        resolve: Effect.gen(function*() {
          const template = yield* templateIn(requester.organizationId, body.template)
          if (template.status === "pending") {
            return yield* new SnapshotPending({ detail: "The template has not settled yet" })
          }
          if (template.status === "failed") {
            return yield* new ResourceNotFound({ detail: "The template failed to save" })
          }
          return {
            source: { kind: "template", id: template.id },
            // Placed like any create; the template's chunks follow (src/runtime/SnapshotWork.ts).
            request: { ...body, template_snapshot_id: template.id }
          }
        })
      }),

    get: findIn,
    getTemplate: templateIn,

    page: (organizationId: string, machineId: string, options: { limit: number; after: string | null }) =>
      Effect.zipRight(
        machines.find(organizationId, machineId),
        snapshots.pageForMachine(machineId, options)
      ),
    templatesPage: (organizationId: string, options: { limit: number; after: string | null }) =>
      snapshots.templatesPage(organizationId, options),

    latest: (organizationId: string, machineId: string) =>
      Effect.gen(function*() {
        yield* machines.find(organizationId, machineId)
        const found = yield* snapshots.latestReady(machineId)
        if (Option.isNone(found)) return yield* new NoSnapshot({ detail: "The machine has no ready snapshot" })
        return found.value
      }),

    delete: (organizationId: string, id: string) => Effect.flatMap(findIn(organizationId, id), deleteOne),
    deleteTemplate: (organizationId: string, template: string) =>
      Effect.flatMap(templateIn(organizationId, template), deleteOne),

    /** Deletes each id once, in the order given; templates and pending pushes are kept and reported. */
    bulkDelete: (organizationId: string, ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const unique = [...new Set(ids.map((id) => id.toLowerCase()))]
        const byId = new Map((yield* snapshots.findManyIn(organizationId, unique)).map((row) => [row.id, row]))
        return yield* deleteSome(unique.map((id) => [id, byId.get(id)] as const))
      }),

    /** Deletes a machine's snapshots (of one source, or all), oldest first, reporting what was kept. */
    deleteForMachine: (organizationId: string, machineId: string, source: "api" | "automatic" | null) =>
      Effect.gen(function*() {
        yield* machines.find(organizationId, machineId)
        const rows = yield* snapshots.ofMachine(machineId, source)
        return yield* deleteSome(rows.map((row) => [row.id, row] as const))
      }),

    /** Collects the store now (tests and benchmarks wait for its size to drop instead). */
    requestCollection
  }
})

export class Snapshots extends Context.Tag("svc/snapshots/Snapshots")<
  Snapshots,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.scoped(Snapshots, make)
}
