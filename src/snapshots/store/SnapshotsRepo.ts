/** Snapshot and template rows (migration 0006). Ids are UUID v7, so id order is creation order. */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

export type SnapshotStatus = "pending" | "ready" | "failed"

export interface SnapshotRow {
  readonly id: string
  readonly organization_id: string
  readonly machine_id: string
  readonly operation_id: string
  /** Template name; null for a snapshot. */
  readonly name: string | null
  readonly status: SnapshotStatus
  readonly tier: "warm" | "cold"
  /** `api` or `automatic`; null for a template. */
  readonly source: "api" | "automatic" | null
  readonly size_bytes: number
  readonly uploaded_bytes: number
  readonly generation: number
  readonly disk_synced: number
  readonly manifest: string | null
  readonly parent_manifest: string | null
  readonly error_code: string | null
  readonly created_at: number
  readonly completed_at: number | null
  /**
   * The host whose store holds the manifest and chunks (the machine's host when taken); null on
   * rows from before hosts (migration 0025).
   */
  readonly host_id?: string | null
}

export type SnapshotPatch = Partial<
  Pick<
    SnapshotRow,
    | "status"
    | "size_bytes"
    | "uploaded_bytes"
    | "generation"
    | "disk_synced"
    | "manifest"
    | "parent_manifest"
    | "error_code"
    | "completed_at"
  >
>

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const one = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])
  return {
    insert: (row: SnapshotRow) => Effect.orDie(sql`INSERT INTO snapshots ${sql.insert(row as any)}`),
    find: (id: string) =>
      sql<SnapshotRow>`SELECT * FROM snapshots WHERE id = ${id}`.pipe(Effect.map(one), Effect.orDie),
    findIn: (organizationId: string, id: string) =>
      sql<SnapshotRow>`SELECT * FROM snapshots WHERE id = ${id} AND organization_id = ${organizationId}`.pipe(
        Effect.map(one),
        Effect.orDie
      ),
    /** The organization's rows among `ids`, in one query (bulk delete). */
    findManyIn: (organizationId: string, ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([] as ReadonlyArray<SnapshotRow>)
        : sql<SnapshotRow>`SELECT * FROM snapshots WHERE organization_id = ${organizationId}
            AND ${sql.in("id", ids)}`.pipe(Effect.orDie),
    findByOperation: (operationId: string) =>
      sql<SnapshotRow>`SELECT * FROM snapshots WHERE operation_id = ${operationId}`.pipe(
        Effect.map(one),
        Effect.orDie
      ),
    findTemplate: (organizationId: string, name: string) =>
      sql<SnapshotRow>`SELECT * FROM snapshots WHERE organization_id = ${organizationId} AND name = ${name}
        ORDER BY status = 'failed', id DESC LIMIT 1`.pipe(
        Effect.map(one),
        Effect.orDie
      ),
    /** Settles a pending row; false when it was not pending any more (settled already, or deleted). */
    settle: (id: string, patch: SnapshotPatch) =>
      sql<{ id: string }>`UPDATE snapshots SET ${sql.update(patch as any)} WHERE id = ${id} AND status = 'pending'
        RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    remove: (ids: ReadonlyArray<string>) =>
      ids.length === 0 ? Effect.void : Effect.orDie(sql`DELETE FROM snapshots WHERE ${sql.in("id", ids)}`),
    /** A machine's snapshots (not templates), oldest first; `after` is the last id of the previous page. */
    pageForMachine: (machineId: string, options: { limit: number; after: string | null }) =>
      sql<SnapshotRow>`SELECT * FROM snapshots WHERE machine_id = ${machineId} AND name IS NULL
        ${options.after === null ? sql`` : sql`AND id > ${options.after}`}
        ORDER BY id LIMIT ${options.limit}`.pipe(Effect.orDie),
    templatesPage: (organizationId: string, options: { limit: number; after: string | null }) =>
      sql<SnapshotRow>`SELECT * FROM snapshots WHERE organization_id = ${organizationId} AND name IS NOT NULL
        ${options.after === null ? sql`` : sql`AND id > ${options.after}`}
        ORDER BY id LIMIT ${options.limit}`.pipe(Effect.orDie),
    /** The newest ready snapshot of the machine (templates excluded), if any. */
    latestReady: (machineId: string) =>
      sql<SnapshotRow>`SELECT * FROM snapshots WHERE machine_id = ${machineId} AND name IS NULL
        AND status = 'ready' ORDER BY id DESC LIMIT 1`.pipe(Effect.map(one), Effect.orDie),
    /** The newest ready snapshot or template of the machine in `tier`: the base of an incremental push. */
    latestBase: (machineId: string, tier: string) =>
      sql<SnapshotRow>`SELECT * FROM snapshots WHERE machine_id = ${machineId} AND tier = ${tier}
        AND status = 'ready' ORDER BY id DESC LIMIT 1`.pipe(Effect.map(one), Effect.orDie),
    /** A machine's snapshots and templates oldest first, or only its snapshots of one source. */
    ofMachine: (machineId: string, source: string | null) =>
      sql<SnapshotRow>`SELECT * FROM snapshots WHERE machine_id = ${machineId}
        ${source === null ? sql`` : sql`AND source = ${source}`} ORDER BY id`.pipe(Effect.orDie),
    /** Snapshots counted by the per-machine limit: ready and pending ones, templates excluded. */
    countForMachine: (machineId: string) =>
      sql<{ n: number }>`SELECT COUNT(*) AS n FROM snapshots WHERE machine_id = ${machineId} AND name IS NULL
        AND status <> 'failed'`.pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), Effect.orDie),
    countTemplates: (organizationId: string) =>
      sql<{ n: number }>`SELECT COUNT(*) AS n FROM snapshots WHERE organization_id = ${organizationId}
        AND name IS NOT NULL AND status <> 'failed'`.pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), Effect.orDie),
    pending: sql<SnapshotRow>`SELECT * FROM snapshots WHERE status = 'pending'`.pipe(Effect.orDie),
    allIds: sql<{ id: string }>`SELECT id FROM snapshots`.pipe(
      Effect.map((rows) => new Set(rows.map((row) => row.id))),
      Effect.orDie
    )
  }
})

export class SnapshotsRepo extends Context.Tag("svc/snapshots/store/SnapshotsRepo")<
  SnapshotsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(SnapshotsRepo, make)
}
