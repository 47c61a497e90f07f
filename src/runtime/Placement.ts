/**
 * Where a new machine's disk goes (docs/scale-out.md "Placement"). Runs inside the create's
 * transaction, under a database-wide lock taken last (after the organization's), so that creates
 * racing on several nodes each see the machines the others placed: the counts it reads are the
 * committed `projected_state = 'running'` rows, which include every accepted create that boots.
 *
 * A requested `host` must be a live host (422 otherwise); a pinned host (a fork's source) wins
 * over the choice. Otherwise: the live host with the fewest running
 * machines that has room (`hosts.capacity`, null: unlimited), ties to the accepting node's host,
 * then by id. A host of capacity 0 (drained) is never chosen, nor may a create name it. With no live host with room the create is still accepted (as on one host, where a
 * full host queues the boot): the least loaded live host takes it, and its start queue
 * (SVC_HOST_MAX_RUNNING, src/runtime/HostCapacity.ts) boots it or fails it with `no_capacity`.
 * On SQLite there is one host, this node's.
 */
import { Clock, Effect } from "effect"
import { hostIdPattern } from "../kernel/config/Readers.js"
import { InvalidRequest } from "../kernel/http/Errors.js"
import { HostLease } from "../kernel/sql/HostLease.js"
import { type HostRow, HostsRepo } from "../kernel/sql/HostsRepo.js"
import { makeRowLocks } from "../kernel/sql/RowLocks.js"
import { MachinesRepo } from "./MachinesRepo.js"

/** Leases are wall-clock times between processes, whatever Clock the request runs on (HostLease.ts). */
const wallClock = Clock.make()

/** The lock every placement takes (an advisory lock on PostgreSQL, nothing on SQLite). */
const placementLock = "svc:placement"

const badHost = (message: string) => new InvalidRequest({ field_errors: [{ field: "host", message }] })

/** A host as placement sees it. */
export interface HostLoad {
  readonly host: HostRow
  readonly live: boolean
  /** Machines that run or will once their accepted operations have run. */
  readonly running: number
}

/** Whether a host has room for one more running machine. */
export const hasRoom = (load: HostLoad) => load.host.capacity === null || load.running < load.host.capacity

export const makePlacement = Effect.gen(function*() {
  const hosts = yield* HostsRepo
  const machines = yield* MachinesRepo
  const lease = yield* HostLease
  const locks = yield* makeRowLocks
  const own = lease.hostId

  /**
   * Every host with its state and load. This node's host is live while it runs (on SQLite its lease
   * is never renewed: the data dir's lock is the lease); on SQLite other rows are ignored.
   */
  const loads = Effect.gen(function*() {
    const now = yield* wallClock.currentTimeMillis
    const rows = (yield* hosts.list).filter((row) => locks.shared || row.host_id === own)
    const running = yield* machines.runningByHost
    return rows.map((host): HostLoad => ({
      host,
      live: host.host_id === own || Number(host.lease_expires_at) > now,
      running: running.get(host.host_id) ?? 0
    }))
  })

  /** Fewest running machines first, then this node's host, then by id. */
  const better = (a: HostLoad, b: HostLoad) =>
    a.running - b.running || (a.host.host_id === own ? 0 : 1) - (b.host.host_id === own ? 0 : 1) ||
    (a.host.host_id < b.host.host_id ? -1 : 1)

  /** The best live host with room; with none, the best live one (its start queue decides). */
  const choose = (all: ReadonlyArray<HostLoad>) => {
    // A host with capacity 0 is being drained: it takes no new machine.
    const live = all.filter((load) => load.live && load.host.capacity !== 0)
    const roomy = live.filter(hasRoom)
    const ranked = [...(roomy.length > 0 ? roomy : live)].sort(better)
    return ranked[0]?.host.host_id ?? own
  }

  return {
    loads,
    /**
     * The host for a new machine: `requested` (the body's `host`) if live, `pinned` where the disk
     * must be, else the choice. Call inside the create's transaction, after its other locks.
     */
    place: (requested: string | null, pinned: string | null): Effect.Effect<string, InvalidRequest> =>
      Effect.gen(function*() {
        if (requested !== null && !hostIdPattern.test(requested)) {
          return yield* badHost("a host id: 1-63 characters of a-z, 0-9 and -")
        }
        yield* locks.name(placementLock)
        const all = yield* loads
        if (requested !== null) {
          const found = all.find((load) => load.host.host_id === requested)
          if (found === undefined) return yield* badHost(`no host ${requested} is known`)
          if (!found.live) return yield* badHost(`host ${requested} has no live node`)
          // A drained host takes nothing new, whoever asks: a tenant naming it must not undo a drain.
          if (found.host.capacity === 0) return yield* badHost(`host ${requested} takes no new machines (drained)`)
          if (pinned !== null && pinned !== requested) {
            return yield* badHost(`the machine's disk must be on host ${pinned}`)
          }
          return requested
        }
        return pinned ?? choose(all)
      })
  }
})

export type Placement = Effect.Effect.Success<typeof makePlacement>
