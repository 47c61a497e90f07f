/**
 * This node's lease on its host (docs/architecture.md "Hosts and leases"): taken at start (the epoch
 * bumped, so a node restarted after kill -9 takes its host back at once and the dead one's writes
 * are fenced off), renewed every `renewSeconds`. A renewal that changes no row (another node took the
 * host) or none that succeeds before the lease ends loses it; so does a fenced transaction that finds
 * the epoch moved on, or that runs once the lease ended (a node paused past it, by SIGSTOP or a
 * stalled VM, must not drive on when it wakes: the other nodes took the host for dead meanwhile).
 * A lost lease is final: every later fenced transaction fails before it writes, and the server
 * exits (`exitOnLoss`).
 *
 * The lease runs on the real clock, not on svc's Clock service: it is liveness between processes,
 * and a test that moves the TestClock seven days ahead must not run 120,960 renewals on the way.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Data, Deferred, Effect, Layer } from "effect"
import { AppConfig, hostSettingsOf } from "../config/AppConfig.js"
import { svcVersion } from "../Version.js"
import { HostsRepo } from "./HostsRepo.js"

/** How long a lease lasts past its last renewal, and how often it is renewed. */
export const leaseSeconds = 15
export const renewSeconds = 5

/** A transaction that drives a machine was refused: this node no longer holds its host. */
export class HostLost extends Data.TaggedError("HostLost")<{ readonly hostId: string; readonly reason: string }> {
  override get message() {
    return `svc: lost the lease of host ${this.hostId}: ${this.reason}`
  }
}

export interface HostLeaseShape {
  readonly hostId: string
  /** The epoch this node took; its fenced transactions check it. */
  readonly epoch: number
  /**
   * Runs first in every transaction that drives a machine (claims, outcomes, recovery): dies with
   * HostLost, before anything is written, once this node lost its host.
   */
  readonly fence: Effect.Effect<void>
  /** Done, with why, once the lease is lost. */
  readonly lost: Deferred.Deferred<HostLost>
  /** One renewal now (the lease's own fiber renews every `renewSeconds`). */
  readonly renew: Effect.Effect<void>
}

export class HostLease extends Context.Tag("svc/kernel/sql/HostLease")<HostLease, HostLeaseShape>() {}

/** The wall clock, whatever Clock the fiber that builds the layer has (a TestClock in tests). */
const wallClock = Clock.make()

const make = Effect.gen(function*() {
  const settings = hostSettingsOf(yield* AppConfig)
  const hosts = yield* HostsRepo
  const { hostId } = settings
  const startedAt = yield* Clock.currentTimeMillis
  const epoch = yield* hosts.take({
    host_id: hostId,
    internal_url: settings.internalUrl,
    capacity: settings.capacity,
    version: svcVersion,
    node_pid: process.pid,
    started_at: startedAt
  }, startedAt + leaseSeconds * 1000)
  yield* Effect.logInfo("took the host's lease").pipe(Effect.annotateLogs({ host_id: hostId, epoch }))
  const lost = yield* Deferred.make<HostLost>()
  let expiresAt = startedAt + leaseSeconds * 1000

  const lose = (reason: string) => Deferred.succeed(lost, new HostLost({ hostId, reason }))

  // On SQLite the data dir's lock is the lease (one node): renewing it would be a committed write,
  // an fsync, every 5 s of a homelab's idle day for nothing. So it never ends there either.
  const renews = (yield* SqlClient.SqlClient).onDialectOrElse({ pg: () => true, orElse: () => false })
  const ended = Effect.map(Clock.currentTimeMillis, (now) => renews && now >= expiresAt)
  const endedReason = "the lease ended before it was renewed (the process was paused or starved)"

  const renew = Effect.gen(function*() {
    if (yield* Deferred.isDone(lost)) return
    if (yield* ended) return yield* lose(endedReason)
    const now = yield* Clock.currentTimeMillis
    const renewed = yield* Effect.exit(hosts.renew(hostId, epoch, now + leaseSeconds * 1000))
    if (renewed._tag === "Success") {
      if (renewed.value) expiresAt = now + leaseSeconds * 1000
      else yield* lose(`another node took it (this node's epoch was ${epoch})`)
      return
    }
    if ((yield* Clock.currentTimeMillis) >= expiresAt) {
      yield* lose("no renewal succeeded before the lease ended")
    } else {
      yield* Effect.logWarning("the host's lease could not be renewed; retrying", renewed.cause)
    }
  })
  if (renews) {
    yield* renew.pipe(Effect.delay(`${renewSeconds} seconds`), Effect.forever, Effect.forkScoped)
  }

  const refused = Effect.flatMap(Deferred.await(lost), Effect.die)
  const fence = Effect.flatMap(
    Deferred.isDone(lost),
    (done) =>
      done ?
        refused :
        Effect.flatMap(Effect.withClock(ended, wallClock), (over) =>
          over ?
            Effect.zipRight(lose(endedReason), refused) :
            Effect.flatMap(
              hosts.held(hostId, epoch),
              (held) => held ? Effect.void : Effect.zipRight(lose(`a newer epoch than ${epoch} holds it`), refused)
            ))
  )
  return HostLease.of({ hostId, epoch, fence, lost, renew: Effect.withClock(renew, wallClock) })
}).pipe(Effect.withClock(wallClock))

/** Takes the host's lease at start and keeps it renewed while the layer lives. */
export const layer = Layer.scoped(HostLease, make)

/**
 * The server's reaction to a lost lease: one log line, then the process ends at once (non-zero),
 * before anything else is written: its machines are another node's now. Not in the tests' services.
 */
export const exitOnLoss = Layer.scopedDiscard(
  Effect.gen(function*() {
    const lease = yield* HostLease
    yield* Deferred.await(lease.lost).pipe(
      Effect.flatMap((lost) => Effect.logError(lost.message)),
      Effect.zipRight(Effect.sync(() => process.exit(1))),
      Effect.forkScoped
    )
  })
)
