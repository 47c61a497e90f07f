/**
 * Removing snapshots: rows go from the product at once, the store's data at its next collection,
 * which runs in the background one at a time (a request while one runs queues one more). A bulk
 * delete reports each id's result: only settled snapshots go; templates and pending pushes stay.
 */
import { Effect, Queue, Runtime } from "effect"
import { SnapshotPending } from "./Errors.js"
import { type SnapshotRow, SnapshotsRepo } from "./store/SnapshotsRepo.js"
import { SnapshotStore } from "./store/SnapshotStore.js"

/** What deleting one snapshot came to. */
export type DeleteResult = "deleted" | "not_found" | "pending" | "template"

export interface DeleteResults {
  readonly deleted: number
  readonly results: ReadonlyArray<{ readonly snapshot_id: string; readonly result: DeleteResult }>
}

/** What a bulk delete does with a row: only settled snapshots go; templates and pending pushes stay. */
const deleteResultOf = (row: SnapshotRow): DeleteResult =>
  row.name !== null ? "template" : row.status === "pending" ? "pending" : "deleted"

const deleteResults = (results: DeleteResults["results"]): DeleteResults => ({
  deleted: results.filter((r) => r.result === "deleted").length,
  results
})

/** Scoped: the collector's fiber lives in the caller's scope. */
export const makeRemoval = Effect.gen(function*() {
  const snapshots = yield* SnapshotsRepo
  const store = yield* SnapshotStore
  const runtime = yield* Effect.runtime<never>()

  const collectRequests = yield* Queue.sliding<void>(1)
  const collect = Effect.tryPromise(() => store.collect(() => Runtime.runPromise(runtime)(snapshots.allIds))).pipe(
    Effect.tap((freed) =>
      freed.chunks > 0 || freed.manifests > 0 ? Effect.logDebug("snapshot store collected", freed) : Effect.void
    ),
    Effect.catchAll((error) => Effect.logError("snapshot store collection failed", error))
  )
  yield* Queue.take(collectRequests).pipe(Effect.zipRight(collect), Effect.forever, Effect.forkScoped)
  const requestCollection = Queue.offer(collectRequests, undefined).pipe(Effect.asVoid)

  /** Removes settled rows from the product at once (one statement); the store's data goes at the next collection. */
  const removeRows = (rows: ReadonlyArray<SnapshotRow>) =>
    Effect.gen(function*() {
      if (rows.length === 0) return
      yield* snapshots.remove(rows.map((row) => row.id))
      yield* Effect.forEach(rows, (row) => Effect.promise(() => store.remove(row.id).catch(() => undefined)), {
        discard: true
      })
      yield* requestCollection
    })

  /** Deletes what may go among the rows found for each id, and reports each id's result in order. */
  const deleteSome = (found: ReadonlyArray<readonly [id: string, row: SnapshotRow | undefined]>) =>
    Effect.gen(function*() {
      const results = found.map(([id, row]) => ({
        snapshot_id: id,
        result: row === undefined ? "not_found" as const : deleteResultOf(row)
      }))
      yield* removeRows(found.flatMap(([, row]) => row !== undefined && deleteResultOf(row) === "deleted" ? [row] : []))
      return deleteResults(results)
    })

  const deleteOne = (row: SnapshotRow) =>
    row.status === "pending"
      ? Effect.fail(new SnapshotPending({ detail: "The snapshot has not settled yet" }))
      : removeRows([row])

  return { requestCollection, removeRows, deleteSome, deleteOne }
})
