/**
 * Wake-ups across nodes: `notify(channel, payload)` reaches the listeners of `channel` on every
 * node. A signal carries a hint, never the news itself: the listener reads the database, so a lost
 * or doubled signal costs a look at the table and loses nothing. Each use keeps a slow poll as the
 * safety net (`poll`), said where it is used.
 *
 * - SQLite (one node): in-process only, delivered at once.
 * - PostgreSQL: delivered in-process at once, and to the other nodes through `pg_notify`. Sends are
 *   queued and go out in batches, one `SELECT pg_notify($1, $2) FROM unnest(...)` each, on the
 *   pool outside any transaction: a NOTIFY in a transaction takes a database-wide lock at its
 *   commit, and @effect/sql-pg 0.53's own `notify` (`NOTIFY chan, $1`) is refused by PostgreSQL.
 *   Call `notify` after the commit of what it announces (the bus's subscribers are called then).
 *   Each node listens on a session of its own (PgSession.ts: heartbeated); when it is lost, a new
 *   one listens again and every listener gets an empty payload (a wake: signals may have been
 *   missed meanwhile). A node's own signals come back from the server and are passed over.
 */
import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, FiberRef, Layer, Queue, type Scope, Stream } from "effect"
import * as NodeCrypto from "node:crypto"
import Pg from "pg"
import { AppConfig } from "../config/AppConfig.js"
import * as PgSession from "../sql/PgSession.js"

/** Signals a listener may hold unread before it loses the oldest. */
const bufferSize = 4096
/** The safety net's period on PostgreSQL: a signal lost on the way delays its work at most this. */
export const pollOnPostgres = Duration.seconds(10)
/**
 * The safety net's period for the Signals built in this fiber: `pollOnPostgres`. A test that must
 * show a wake came by signal, not by the poll, builds its services with it `Duration.infinity`.
 */
export const pollPeriod = FiberRef.unsafeMake<Duration.Duration>(pollOnPostgres)

export interface SignalsShape {
  /** Tells the listeners of `channel` on every node (`payload` "" by default: a plain wake). */
  readonly notify: (channel: string, payload?: string) => Effect.Effect<void>
  /** The payloads notified on `channel` from now on, for the scope's lifetime (listening begins at once). */
  readonly subscribe: (channel: string) => Effect.Effect<Queue.Dequeue<string>, never, Scope.Scope>
  /** The same as a Stream (listening begins when it runs). */
  readonly listen: (channel: string) => Stream.Stream<string>
  /**
   * The safety net: completes after `pollOnPostgres` on the live clock (a lost signal is a matter
   * of the network, not of svc's time, so a test's TestClock sees no extra timer); never on SQLite,
   * where no signal is lost. A listener races it with its wait, then looks at its table.
   */
  readonly poll: Effect.Effect<void>
}

export class Signals extends Context.Tag("svc/kernel/events/Signals")<Signals, SignalsShape>() {
  static readonly layer = Layer.scoped(
    Signals,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const local = makeLocal()
      if (config.postgresUrl === undefined) return local.shape(Effect.never)
      return yield* acrossNodes(config.postgresUrl, local)
    })
  )
}

const makeLocal = () => {
  const listeners = new Map<string, Set<Queue.Queue<string>>>()
  const deliver = (channel: string, payload: string) => {
    const set = listeners.get(channel)
    if (set !== undefined) { for (const queue of set) Queue.unsafeOffer(queue, payload) }
  }
  const subscribe = (channel: string) =>
    Effect.acquireRelease(
      Effect.map(Queue.sliding<string>(bufferSize), (queue) => {
        const set = listeners.get(channel)
        if (set === undefined) listeners.set(channel, new Set([queue]))
        else set.add(queue)
        return queue
      }),
      (queue) =>
        Effect.zipRight(
          Effect.sync(() => listeners.get(channel)?.delete(queue)),
          Queue.shutdown(queue)
        )
    ) as Effect.Effect<Queue.Dequeue<string>, never, Scope.Scope>
  return {
    deliver,
    channels: () => [...listeners.keys()],
    shape: (
      poll: Effect.Effect<void>,
      send: (channel: string, payload: string) => void = () => undefined,
      listening: (channel: string) => Effect.Effect<void> = () => Effect.void
    ): SignalsShape => {
      const listened = (channel: string) => Effect.tap(subscribe(channel), () => listening(channel))
      return {
        notify: (channel, payload = "") =>
          Effect.sync(() => {
            deliver(channel, payload)
            send(channel, payload)
          }),
        subscribe: listened,
        listen: (channel) => Stream.unwrapScoped(Effect.map(listened(channel), (queue) => Stream.fromQueue(queue))),
        poll
      }
    }
  }
}

/** Channels are prefixed, so svc's signals never meet another program's on the same database. */
const pgChannel = (channel: string) => `svc.${channel}`

const acrossNodes = (url: string, local: ReturnType<typeof makeLocal>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    /** Who sent a signal: this node's own come back from the server and are passed over. */
    const node = NodeCrypto.randomBytes(8).toString("hex")
    const pending = new Map<string, readonly [string, string]>()
    const kicks = yield* Queue.sliding<void>(1)
    let session: PgSession.Session | undefined

    const sendBatch = Effect.gen(function*() {
      yield* Queue.take(kicks)
      const batch = [...pending.values()]
      pending.clear()
      if (batch.length === 0) return
      yield* sql.unsafe(
        "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS t(c, p)",
        [batch.map(([channel]) => pgChannel(channel)), batch.map(([, payload]) => `${node} ${payload}`)]
      ).pipe(
        // Lost: the listeners' polls find the work (the database is the truth).
        Effect.catchAllCause((cause) => Effect.logWarning("signals not sent", cause))
      )
    })
    yield* Effect.forkScoped(Effect.forever(sendBatch))

    const listenOn = (current: PgSession.Session, channel: string) =>
      Effect.ignore(current.query(`LISTEN ${Pg.escapeIdentifier(pgChannel(channel))}`))

    const keep = Effect.scoped(Effect.gen(function*() {
      const current = yield* PgSession.open(url, "svc signals")
      current.onNotification((channel, message) => {
        const space = message.indexOf(" ")
        if (!channel.startsWith("svc.") || space < 0 || message.slice(0, space) === node) return
        local.deliver(channel.slice(4), message.slice(space + 1))
      })
      for (const channel of local.channels()) yield* listenOn(current, channel)
      session = current
      // Signals sent while no session listened are not replayed: a wake makes every listener look.
      for (const channel of local.channels()) local.deliver(channel, "")
      yield* current.lost
    })).pipe(
      Effect.catchAll((lost) => Effect.logWarning(`signals: PostgreSQL session lost (${lost.reason})`)),
      Effect.ensuring(Effect.sync(() => void (session = undefined))),
      Effect.zipRight(Effect.sleep("1 second"))
    )
    yield* Effect.forkScoped(PgSession.onLiveClock(Effect.forever(keep)))

    const period = yield* FiberRef.get(pollPeriod)
    return local.shape(
      PgSession.onLiveClock(Effect.sleep(period)),
      (channel, payload) => {
        pending.set(`${channel} ${payload}`, [channel, payload])
        Queue.unsafeOffer(kicks, undefined)
      },
      (channel) => Effect.suspend(() => session === undefined ? Effect.void : listenOn(session, channel))
    )
  })
