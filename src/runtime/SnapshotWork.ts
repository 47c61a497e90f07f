/**
 * The snapshot side of carrying out operations, for the runtime (src/runtime/Apply.ts): pushing a
 * stopped machine's disk into the store (`snapshot`), and filling a new machine's disk from its
 * source before it is created (`fork`, `restore`, `create` from a template). Both are safe to
 * repeat: a push whose manifest exists is answered from it, and a disk that exists was filled
 * whole (it appears by one rename).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Data, Effect, Layer, Option, Runtime, Schedule } from "effect"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import { DriverError, MachineDriver } from "../drivers/MachineDriver.js"
import { AppConfig, hostSettingsOf } from "../kernel/config/AppConfig.js"
import { nodeHeader, signNodeRequest } from "../kernel/crypto/NodeRequests.js"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import type { DomainEvent } from "../kernel/events/DomainEvents.js"
import { HostsRepo } from "../kernel/sql/HostsRepo.js"
import { copyMissing, NotOnHolder } from "../snapshots/store/ChunkCopy.js"
import { CorruptChunk, NoManifest } from "../snapshots/store/ChunkStore.js"
import { snapshotEvent } from "../snapshots/store/Events.js"
import { syncFileSystem } from "../snapshots/store/Fsync.js"
import { readyPatch } from "../snapshots/store/Manifest.js"
import { type SnapshotRow, SnapshotsRepo } from "../snapshots/store/SnapshotsRepo.js"
import { SnapshotStore } from "../snapshots/store/SnapshotStore.js"
import { copyTree, removeTree } from "../snapshots/store/Tree.js"
import type { MachineRow } from "./MachinesRepo.js"
import { MachinesRepo } from "./MachinesRepo.js"
import type { OperationRow } from "./OperationsRepo.js"
import type { Outcome } from "./Outcome.js"

type ProgressHook = (doneBytes: number, totalBytes: number) => Effect.Effect<void>

/** What a fork, a restore or a machine made from a template names as its source (its decoded request). */
export interface FillSource {
  readonly kind: "create" | "fork" | "restore"
  readonly source_machine_id?: string | undefined
  readonly snapshot_id?: string | undefined
  readonly template_snapshot_id?: string | undefined
}

/** A fork, a restore or a machine made from a template gets its disk from its source first. */
export const fillSourceOf = (
  kind: "create" | "fork" | "restore",
  request: Omit<FillSource, "kind">
): FillSource | undefined =>
  kind === "fork" || kind === "restore" || (kind === "create" && typeof request.template_snapshot_id === "string")
    ? { ...request, kind }
    : undefined

/**
 * Whether `path` exists, without blocking the event loop: every machine's actor shares it, so one
 * machine's fill must not stall the others.
 */
const exists = (path: string) => Effect.promise(() => NodeFs.access(path).then(() => true, () => false))

/** Progress from the store's callbacks, at most every 250 ms (each is a persisted event). */
const throttled = (hook: ProgressHook) =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    let last = 0
    return (doneBytes: number, totalBytes: number) => {
      const now = Date.now()
      if (doneBytes >= totalBytes || now - last < 250) return
      last = now
      Runtime.runFork(runtime)(hook(doneBytes, totalBytes))
    }
  })

/** The snapshot's holder has no live node, or did not answer: its chunks cannot be had now. */
class HolderUnavailable extends Data.TaggedError("HolderUnavailable")<{ readonly reason: string }> {}

/** How long a copy waits for the holder's node (a restart takes seconds) before the operation fails. */
const holderPatience = Schedule.intersect(Schedule.spaced("2 seconds"), Schedule.recurs(30))

/** Liveness between processes: the wall clock, not svc's Clock (a TestClock must not stall a copy). */
const wallClock = Clock.make()

const make = Effect.gen(function*() {
  const store = yield* SnapshotStore
  const sql = yield* SqlClient.SqlClient
  const hosts = yield* HostsRepo
  const box = yield* SecretBox
  const ownHost = hostSettingsOf(yield* AppConfig).hostId
  // On SQLite one node holds every snapshot: a manifest missing there is missing.
  const severalHosts = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const snapshots = yield* SnapshotsRepo
  const machines = yield* MachinesRepo
  const driver = yield* MachineDriver

  const hostError = (what: string) => (cause: unknown) =>
    new DriverError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

  /** Copies a (possibly running: then paused meanwhile) machine's disk to `target`, whole or not at all. */
  const copyDisk = (sourceId: string, targetId: string, onProgress: ProgressHook) =>
    Effect.gen(function*() {
      // A driver whose disks are images copies the source's whole, frozen (docs/drivers.md "Disk"),
      // after the partial tree an earlier walk left (a crash) is gone.
      if (driver.copyDisk !== undefined) {
        const partial = `${driver.diskPath(targetId)}.partial`
        yield* Effect.tryPromise({ try: () => removeTree(partial), catch: hostError("fork") })
        const copied = yield* driver.copyDisk(sourceId, targetId)
        if (copied !== undefined) return yield* onProgress(copied, copied)
      }
      const source = driver.diskPath(sourceId)
      const target = driver.diskPath(targetId)
      const running = (yield* driver.observe(sourceId)).running
      const partial = `${target}.partial`
      const report = yield* throttled(onProgress)
      const copy = Effect.tryPromise({
        try: async () => {
          await syncFileSystem(source)
          await removeTree(partial)
          await NodeFs.mkdir(NodePath.dirname(target), { recursive: true })
          let done = 0
          const entries = await copyTree(source, partial, (bytes) => report(done += bytes, Number.MAX_SAFE_INTEGER))
          await syncFileSystem(partial)
          await NodeFs.rename(partial, target)
          return entries.reduce((sum, entry) => sum + entry.size, 0)
        },
        catch: hostError("fork")
      })
      const total = running
        ? yield* Effect.acquireUseRelease(
          driver.freeze(sourceId),
          () => copy,
          () => Effect.ignore(driver.thaw(sourceId))
        )
        : yield* copy
      yield* onProgress(total, total)
    })

  /** A GET of an internal path from `baseUrl`'s node, signed as this host: its bytes, or undefined on 404. */
  const fetchSigned = (baseUrl: string) => async (path: string) => {
    const url = new URL(`${baseUrl.replace(/\/$/, "")}${path}`)
    const signature = await Effect.runPromise(
      signNodeRequest("GET", url.pathname, ownHost).pipe(Effect.provideService(SecretBox, box))
    )
    const response = await fetch(url, { headers: { [nodeHeader]: signature }, signal: AbortSignal.timeout(60_000) })
    if (response.status === 404) return undefined
    if (!response.ok) throw new Error(`${url.pathname}: ${response.status} from the holder`)
    return new Uint8Array(await response.arrayBuffer())
  }

  /**
   * Copies what this host's store misses of `snapshot` from its holder's node (another host's),
   * waiting up to a minute for that node to be live and to answer.
   */
  const copyFromHolder = (snapshot: SnapshotRow) =>
    Effect.gen(function*() {
      const holder = snapshot.host_id
      if (!severalHosts || holder === null || holder === undefined || holder === ownHost) return
      if (snapshot.manifest === null) return
      if ((yield* Effect.promise(() => store.read(snapshot.id))) !== undefined) return
      const manifest = snapshot.manifest
      const attempt = Effect.gen(function*() {
        const row = yield* hosts.find(holder)
        const now = yield* Clock.currentTimeMillis
        if (Option.isNone(row) || row.value.lease_expires_at < now) {
          return yield* new HolderUnavailable({ reason: `host ${holder} has no live node` })
        }
        return yield* Effect.tryPromise({
          try: () => copyMissing(store, snapshot.id, manifest, fetchSigned(row.value.internal_url)),
          catch: (cause) =>
            cause instanceof NotOnHolder || cause instanceof CorruptChunk
              ? cause
              : new HolderUnavailable({ reason: cause instanceof Error ? cause.message : String(cause) })
        })
      })
      const copied = yield* attempt.pipe(
        Effect.retry({ schedule: holderPatience, while: (error) => error instanceof HolderUnavailable }),
        Effect.withClock(wallClock)
      )
      yield* Effect.logInfo("snapshot copied from its holder").pipe(
        Effect.annotateLogs({ snapshot_id: snapshot.id, holder, chunks: copied.chunks, bytes: copied.bytes })
      )
    })

  /** Settles a snapshot's row and answers its `snapshot.ready` or `snapshot.failed`, the row as written. */
  const settledEvent = <A>(id: string, settle: Effect.Effect<A>): Effect.Effect<ReadonlyArray<DomainEvent>> =>
    Effect.zipRight(settle, Effect.map(snapshots.find(id), (row) => Option.toArray(Option.map(row, snapshotEvent))))

  return {
    settledEvent,
    push: (operation: OperationRow, machine: MachineRow, onProgress: ProgressHook) =>
      Effect.gen(function*() {
        const found = yield* snapshots.findByOperation(operation.id)
        if (Option.isNone(found)) return { status: "failed", errorCode: "snapshot_not_found" } satisfies Outcome
        const row = found.value
        if (row.status !== "pending") return { status: "succeeded", unchanged: true, machine: {} } satisfies Outcome
        const base = yield* snapshots.latestBase(machine.id, row.tier)
        const report = yield* throttled(onProgress)
        const now = yield* Clock.currentTimeMillis
        const pushed = yield* Effect.either(Effect.tryPromise(() =>
          store.push({
            snapshotId: row.id,
            machineId: machine.id,
            scope: machine.organization_id,
            disk: driver.diskPath(machine.id),
            tier: row.tier,
            parentId: Option.getOrUndefined(Option.map(base, (b) => b.id)),
            onProgress: report,
            now
          })
        ))
        const completed = yield* Clock.currentTimeMillis
        if (pushed._tag === "Left") {
          yield* Effect.logError("snapshot push failed", pushed.left.error).pipe(
            Effect.annotateLogs({ snapshot_id: row.id, operation_id: operation.id })
          )
          return {
            status: "failed",
            errorCode: "snapshot_failed",
            also: settledEvent(
              row.id,
              snapshots.settle(row.id, { status: "failed", error_code: "snapshot_failed", completed_at: completed })
            )
          } satisfies Outcome
        }
        const summary = pushed.right
        yield* onProgress(summary.size_bytes, summary.size_bytes)
        return {
          status: "succeeded",
          unchanged: false,
          machine: {},
          also: settledEvent(row.id, snapshots.settle(row.id, readyPatch(summary, completed)))
        } satisfies Outcome
      }),

    /**
     * Fills the new machine's disk from its source; answers the error code when the source cannot
     * be had (the operation fails with it), or fails with DriverError for a host error (retried).
     */
    fill: (from: FillSource, machine: MachineRow, onProgress: ProgressHook) =>
      Effect.gen(function*() {
        const target = driver.diskPath(machine.id)
        if (yield* exists(target)) {
          // Filled before a crash: a fork may have died before resuming its source.
          if (from.kind === "fork") yield* Effect.ignore(driver.thaw(String(from.source_machine_id)))
          return Option.none<string>()
        }
        if (from.kind === "fork") {
          const source = yield* machines.find(String(from.source_machine_id))
          if (Option.isNone(source) || source.value.state === "deleted") return Option.some("machine_deleted")
          if (!(yield* exists(driver.diskPath(source.value.id)))) return Option.some("machine_not_created")
          yield* copyDisk(source.value.id, machine.id, onProgress)
          return Option.none<string>()
        }
        const snapshotId = String(from.snapshot_id ?? from.template_snapshot_id)
        const snapshot = yield* snapshots.find(snapshotId)
        if (Option.isNone(snapshot) || snapshot.value.status !== "ready") return Option.some("no_snapshot")
        const copied = yield* Effect.either(copyFromHolder(snapshot.value))
        if (copied._tag === "Left") {
          const cause = copied.left
          yield* Effect.logWarning("snapshot copy from its holder failed", cause).pipe(
            Effect.annotateLogs({ snapshot_id: snapshotId, holder: snapshot.value.host_id })
          )
          if (cause instanceof NotOnHolder) return Option.some("no_snapshot")
          if (cause instanceof CorruptChunk) return Option.some("snapshot_corrupt")
          return Option.some("host_unavailable")
        }
        const report = yield* throttled(onProgress)
        const restored = yield* Effect.either(Effect.tryPromise(() => store.restore(snapshotId, target, report)))
        if (restored._tag === "Left") {
          const cause = restored.left.error
          if (cause instanceof NoManifest) return Option.some("no_snapshot")
          if (cause instanceof CorruptChunk) return Option.some("snapshot_corrupt")
          return yield* hostError("restore")(cause)
        }
        yield* onProgress(snapshot.value.size_bytes, snapshot.value.size_bytes)
        return Option.none<string>()
      })
  }
})

export class SnapshotWork extends Context.Tag("svc/snapshots/SnapshotWork")<
  SnapshotWork,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(SnapshotWork, make)
}
