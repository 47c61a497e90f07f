/**
 * Work that must run on one node at a time (the webhook and alert senders, the meter, the
 * housekeeping, the abuse guard's sample: docs/scale-out.md lists them): `run(name, work)`.
 *
 * - SQLite: it just runs; one process per data dir (DataDirLock.ts) is one node.
 * - PostgreSQL: the node holds the session advisory lock of a stable 64-bit hash of the name on a
 *   session of its own (PgSession.ts), one for all its singletons. A node that does not hold a
 *   name tries again every 3 s; the session is heartbeated, and its loss (the heartbeat failed, the
 *   server went away) interrupts every work it held, which then waits its turn again. A node that
 *   dies ends its session, so the server lets its locks go at once and another node takes the work
 *   over within the 3 s of its next try (the contract says 10 s).
 *
 * A lock cannot fence a writer that lost it without knowing yet (a node cut off from the server,
 * until its heartbeat fails): so each work is written to be safe if done twice for a moment
 * (deliveries at least once with the same `webhook-id`, idempotent keys for the timers' stops).
 */
import { Context, Deferred, Duration, Effect, Layer, Queue } from "effect"
import * as NodeCrypto from "node:crypto"
import { AppConfig } from "../config/AppConfig.js"
import * as PgSession from "./PgSession.js"

/** How often a node that does not hold a name tries to take it. */
export const retry = Duration.seconds(3)

export interface SingletonsShape {
  /**
   * Runs `work` while this node holds `name`: waits its turn, and when the hold is lost interrupts
   * `work` and waits again. Completes as `work` does (and lets the name go).
   */
  readonly run: <A, E, R>(name: string, work: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The names this node holds now (tests and the operator's view). */
  readonly held: Effect.Effect<ReadonlyArray<string>>
}

export class Singletons extends Context.Tag("svc/kernel/sql/Singletons")<Singletons, SingletonsShape>() {
  static readonly layer = Layer.scoped(
    Singletons,
    Effect.flatMap(AppConfig, (config) => config.postgresUrl === undefined ? inProcess : onPostgres(config.postgresUrl))
  )
}

/** The advisory lock key of a name: the first 8 bytes of its SHA-256, a signed 64-bit integer (as text). */
export const lockKey = (name: string) =>
  NodeCrypto.createHash("sha256").update(`svc singleton ${name}`).digest().readBigInt64BE(0).toString()

/** One run of the same name at a time within a node (a session's advisory locks are re-entrant). */
const perName = () => {
  const semaphores = new Map<string, Effect.Semaphore>()
  return (name: string) => {
    let semaphore = semaphores.get(name)
    if (semaphore === undefined) {
      semaphore = Effect.unsafeMakeSemaphore(1)
      semaphores.set(name, semaphore)
    }
    return semaphore.withPermits(1)
  }
}

const inProcess = Effect.sync((): SingletonsShape => {
  const held = new Set<string>()
  const one = perName()
  return {
    run: (name, work) =>
      one(name)(
        Effect.acquireUseRelease(
          Effect.sync(() => held.add(name)),
          () => work,
          () => Effect.sync(() => held.delete(name))
        )
      ),
    held: Effect.sync(() => [...held])
  }
})

interface Want {
  readonly name: string
  readonly key: string
  state: "waiting" | "held"
  /** The session whose lock it holds. */
  heldOn?: PgSession.Session
  /** Completed when the lock is taken for it. */
  readonly taken: Deferred.Deferred<void>
  /** Completed when its session is lost while it held the lock. */
  readonly lost: Deferred.Deferred<void>
}

const onPostgres = (url: string) =>
  Effect.gen(function*() {
    const wants = new Map<string, Want>()
    const kicks = yield* Queue.sliding<void>(1)
    const kick = Queue.offer(kicks, undefined)
    let session: PgSession.Session | undefined

    const unlock = (current: PgSession.Session, key: string) =>
      Effect.ignore(current.query("SELECT pg_advisory_unlock($1::bigint)", [key]))

    /** One try for every name waiting: one statement, whatever their number. */
    const tryWaiting = (current: PgSession.Session) =>
      Effect.gen(function*() {
        const waiting = [...wants.values()].filter((want) => want.state === "waiting").map((want) => want.key)
        if (waiting.length === 0) return
        const rows = yield* current.query<{ key: string; taken: boolean }>(
          "SELECT k::text AS key, pg_try_advisory_lock(k) AS taken FROM unnest($1::bigint[]) AS k",
          [waiting]
        )
        for (const row of rows) {
          if (!row.taken) continue
          const want = wants.get(row.key)
          if (want === undefined || want.state !== "waiting") {
            // Its run ended while the statement ran: let the name go again.
            yield* unlock(current, row.key)
            continue
          }
          want.state = "held"
          want.heldOn = current
          yield* Deferred.succeed(want.taken, undefined)
        }
      })

    /** A session's life: tries every 3 s (or when a run begins) until the session is lost. */
    const keep = Effect.scoped(Effect.gen(function*() {
      const current = yield* PgSession.open(url, "svc singletons")
      session = current
      yield* Effect.raceFirst(
        Effect.forever(Effect.zipRight(tryWaiting(current), Effect.raceFirst(Effect.sleep(retry), Queue.take(kicks)))),
        current.lost
      )
    })).pipe(
      Effect.catchAll((lost) => Effect.logWarning(`singletons: PostgreSQL session lost (${lost.reason})`)),
      Effect.ensuring(Effect.suspend(() => {
        session = undefined
        // What the session held is gone with it: the works stop, and wait for their turn again.
        const held = [...wants.values()].filter((want) => want.state === "held")
        for (const want of held) wants.delete(want.key)
        return Effect.forEach(held, (want) => Deferred.succeed(want.lost, undefined), { discard: true })
      })),
      Effect.zipRight(Effect.sleep("1 second"))
    )
    yield* Effect.forkScoped(PgSession.onLiveClock(Effect.forever(keep)))

    const one = perName()
    const hold = <A, E, R>(name: string, work: Effect.Effect<A, E, R>) =>
      Effect.acquireUseRelease(
        Effect.gen(function*() {
          const want: Want = {
            name,
            key: lockKey(name),
            state: "waiting",
            taken: yield* Deferred.make<void>(),
            lost: yield* Deferred.make<void>()
          }
          wants.set(want.key, want)
          yield* kick
          return want
        }),
        (want) =>
          Effect.zipRight(
            Deferred.await(want.taken),
            Effect.raceFirst(
              Effect.map(Effect.exit(work), (exit) => ({ exit })),
              Effect.as(Deferred.await(want.lost), undefined)
            )
          ),
        (want) =>
          Effect.suspend(() => {
            if (wants.get(want.key) === want) wants.delete(want.key)
            // A lock of a lost session went with it; one of the live session is let go.
            const current = want.heldOn
            return current !== undefined && current === session ? unlock(current, want.key) : Effect.void
          })
      )

    const run = <A, E, R>(name: string, work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      one(name)(Effect.gen(function*() {
        while (true) {
          const ended = yield* hold(name, work)
          if (ended !== undefined) return yield* ended.exit
          yield* Effect.logInfo(`singleton ${name}: its session was lost; waiting for its turn again`)
        }
      }))

    return {
      run,
      held: Effect.sync(() => [...wants.values()].filter((want) => want.state === "held").map((want) => want.name))
    } satisfies SingletonsShape
  })
