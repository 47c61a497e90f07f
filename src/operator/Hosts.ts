/**
 * The hosts of the service as an operator sees them (`GET /v1/operator/hosts`, `svc admin hosts`):
 * each host's row with its lease's state and the machines that run or will on it. Live = the lease
 * has not ended on the wall clock; on SQLite the lease is never renewed (the data dir's lock is
 * the lease, src/kernel/sql/HostLease.ts), so the caller says which host it knows to be live.
 */
import { Clock, Effect } from "effect"
import { type HostRow, HostsRepo } from "../kernel/sql/HostsRepo.js"
import { EngineReads } from "../runtime/EngineReads.js"

export interface HostView {
  readonly row: HostRow
  readonly live: boolean
  readonly running: number
}

/** Leases are wall-clock times between processes, whatever Clock the caller runs on. */
const wallClock = Clock.make()

/** Every host, by id; `knownLive` answers for a row whose lease the table cannot vouch for. */
export const listHosts = (knownLive: (row: HostRow) => boolean) =>
  Effect.gen(function*() {
    const hosts = yield* HostsRepo
    const { machines } = yield* EngineReads
    const now = yield* wallClock.currentTimeMillis
    const rows = yield* hosts.list
    const running = yield* machines.runningByHost
    return rows.map((row): HostView => ({
      row,
      live: Number(row.lease_expires_at) > now || knownLive(row),
      running: running.get(row.host_id) ?? 0
    }))
  })

/** The wire form of a host (HostDto). */
export const hostDto = (view: HostView) => ({
  host_id: view.row.host_id,
  internal_url: view.row.internal_url,
  state: view.live ? "live" as const : "expired" as const,
  lease_expires_at: new Date(Number(view.row.lease_expires_at)).toISOString(),
  running_machines: view.running,
  capacity: view.row.capacity === null ? null : Number(view.row.capacity),
  version: view.row.version
})
