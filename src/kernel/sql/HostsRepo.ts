/**
 * The `hosts` table (docs/architecture.md "Hosts and leases"): one row per host, with the lease of
 * the node that drives the host's machines. Taking the lease bumps `epoch`; every later write of the
 * node that held the lease before is fenced off by it (`fence`). The same SQL on both databases: on
 * SQLite one node holds the data dir's lock, so its lease is never contested, but it is taken and
 * renewed all the same.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { Prepared } from "./Sqlite.js"

export interface HostRow {
  readonly host_id: string
  readonly internal_url: string
  readonly capacity: number | null
  readonly version: string
  readonly epoch: number
  readonly lease_expires_at: number
  readonly node_pid: number
  readonly started_at: number
}

/** What a node says of itself when it takes its host. */
export type HostClaim = Omit<HostRow, "epoch" | "lease_expires_at">

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const prepared = yield* Prepared
  const isPostgres = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const fenceText = "SELECT 1 AS held FROM hosts WHERE host_id = ? AND epoch = ? FOR SHARE"
  return {
    /**
     * Takes the host's lease, whoever held it: the row is made if missing, its epoch bumped, its
     * lease running until `expiresAt`. Answers the new epoch, which fences the previous holder.
     */
    take: (claim: HostClaim, expiresAt: number) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO hosts ${sql.insert({ ...claim, epoch: 0, lease_expires_at: expiresAt })}
          ON CONFLICT (host_id) DO NOTHING`
        const rows = yield* sql<{ epoch: number }>`UPDATE hosts SET epoch = epoch + 1,
            lease_expires_at = ${expiresAt}, internal_url = ${claim.internal_url}, capacity = ${claim.capacity},
            version = ${claim.version}, node_pid = ${claim.node_pid}, started_at = ${claim.started_at}
          WHERE host_id = ${claim.host_id} RETURNING epoch`
        return Number(rows[0]!.epoch)
      })).pipe(Effect.orDie),
    /** Extends the lease held at `epoch`; false when another node took the host meanwhile. */
    renew: (hostId: string, epoch: number, expiresAt: number) =>
      Effect.map(
        prepared.run("UPDATE hosts SET lease_expires_at = ? WHERE host_id = ? AND epoch = ?", expiresAt, hostId, epoch),
        (changed) => changed > 0
      ),
    /**
     * Inside a transaction that drives a machine: whether the lease at `epoch` is still this node's.
     * On PostgreSQL the row is share-locked until the commit, so a takeover's update waits for the
     * transaction (and the transaction for a takeover already committed sees the new epoch). On
     * SQLite nothing is asked: one node per data dir.
     */
    held: (hostId: string, epoch: number) =>
      isPostgres
        ? Effect.map(prepared.first<{ held: number }>(fenceText, hostId, epoch), Option.isSome)
        : Effect.succeed(true),
    list: sql<HostRow>`SELECT * FROM hosts ORDER BY host_id`.pipe(Effect.orDie),
    find: (hostId: string) => prepared.first<HostRow>("SELECT * FROM hosts WHERE host_id = ?", hostId)
  }
})

export class HostsRepo extends Context.Tag("svc/kernel/sql/HostsRepo")<
  HostsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(HostsRepo, make)
}
