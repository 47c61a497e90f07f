/**
 * A PostgreSQL session of its own, outside the pool, for what lives exactly as long as a session:
 * session advisory locks (Singletons.ts) and `LISTEN` (Signals.ts). A pooled connection would do
 * neither well: the pool hands it back with its locks still held, and @effect/sql-pg's `listen`
 * ignores the errors of its connection. Here an "error" or "end" of the connection, or a heartbeat
 * (`SELECT 1` every 3 s) that fails or takes over 5 s, marks the session lost; its owner opens a
 * new one. Its timers run on the live clock: they measure the network, not svc's time, so a test
 * that moves a TestClock by hours fails no heartbeat.
 */
import { Clock, Data, Deferred, Duration, Effect, Exit, type Scope } from "effect"
import Pg from "pg"

/** How often a session proves it is alive; a holder learns of its loss within about this. */
export const heartbeat = Duration.seconds(3)
/** A statement on the session that takes longer than this ends it. */
const statementTimeout = Duration.seconds(5)

/** The timers of the sessions' upkeep, whatever clock the caller's fiber has. */
const liveClock = Clock.make()
export const onLiveClock = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.withClock(effect, liveClock)

export class SessionLost extends Data.TaggedError("SessionLost")<{ readonly reason: string }> {}

export interface Session {
  readonly query: <Row extends object>(
    text: string,
    params?: ReadonlyArray<unknown>
  ) => Effect.Effect<ReadonlyArray<Row>, SessionLost>
  /** Completes when the session is lost (its locks are gone, its LISTENs too). */
  readonly lost: Effect.Effect<void>
  /** Calls `f` at each notification the session receives. */
  readonly onNotification: (f: (channel: string, payload: string) => void) => void
}

const reasonOf = (cause: unknown) => cause instanceof Error ? cause.message : String(cause)

/** A new session named `name` (its `application_name`), closed with the scope; heartbeated meanwhile. */
export const open = (url: string, name: string): Effect.Effect<Session, SessionLost, Scope.Scope> =>
  onLiveClock(Effect.gen(function*() {
    const lost = yield* Deferred.make<void>()
    const client = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const client = new Pg.Client({
            connectionString: url,
            application_name: name,
            connectionTimeoutMillis: Duration.toMillis(statementTimeout),
            keepAlive: true
          })
          client.on("error", () => Deferred.unsafeDone(lost, Exit.void))
          client.on("end", () => Deferred.unsafeDone(lost, Exit.void))
          try {
            await client.connect()
          } catch (cause) {
            void client.end().catch(() => undefined)
            throw cause
          }
          return client
        },
        catch: (cause) => new SessionLost({ reason: reasonOf(cause) })
      }),
      // Ending the session is what lets its locks go: the server ends them with it.
      (client) => Effect.promise(() => client.end().catch(() => undefined)).pipe(Effect.timeoutOption("1 second"))
    )
    // One statement at a time: node-postgres queues them, but deprecates being asked to.
    const one = yield* Effect.makeSemaphore(1)
    const query = <Row extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
      one.withPermits(1)(Effect.tryPromise({
        try: () => client.query(text, params as Array<unknown>),
        catch: (cause) => new SessionLost({ reason: reasonOf(cause) })
      })).pipe(
        Effect.map((result) => result.rows as ReadonlyArray<Row>),
        Effect.timeoutFail({
          duration: statementTimeout,
          onTimeout: () => new SessionLost({ reason: "no answer within 5 s" })
        }),
        Effect.tapError(() => Deferred.succeed(lost, undefined)),
        Effect.withClock(liveClock)
      )
    yield* query("SELECT 1").pipe(
      Effect.zipRight(Effect.sleep(heartbeat)),
      Effect.forever,
      Effect.catchAll(() => Effect.void),
      Effect.forkScoped
    )
    return {
      query,
      lost: Deferred.await(lost),
      onNotification: (f) =>
        void client.on("notification", (message) => {
          f(message.channel, message.payload ?? "")
        })
    } satisfies Session
  }))
