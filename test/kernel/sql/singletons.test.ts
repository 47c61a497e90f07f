/**
 * Once-only work and wake-ups across nodes (src/kernel/sql/Singletons.ts, src/kernel/events/Signals.ts,
 * docs/scale-out.md). Two "nodes" are two sets of these services over one database, each with its
 * own sessions. On SQLite (one node) a singleton just runs and a signal reaches this process's
 * listeners. On PostgreSQL (the PostgreSQL pass: SVC_TEST_DATABASE=postgres) only one node runs a
 * name's work; when the holder's session is killed the other takes it over within 10 s; a signal
 * sent by one node reaches the other's listener.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Queue, Scope } from "effect"
import { AppConfig } from "../../../src/kernel/config/AppConfig.js"
import { Signals } from "../../../src/kernel/events/Signals.js"
import * as Postgres from "../../../src/kernel/sql/Postgres.js"
import { lockKey, Singletons } from "../../../src/kernel/sql/Singletons.js"
import { testPostgresUrl } from "../../support/Postgres.js"
import { until } from "../../support/Services.js"
import { tempDir, testConfig } from "../../support/TestServer.js"

const onPostgres = process.env.SVC_TEST_DATABASE === "postgres"

/** The next payload that is not a plain wake (a listening session's start sends "" to every listener). */
const nextPayload = (queue: Queue.Dequeue<string>) => Queue.take(queue).pipe(Effect.repeat({ until: (p) => p !== "" }))

/** One node's Singletons and Signals over `url` (undefined: SQLite, where they need no database). */
const node = (url: string | undefined) =>
  Effect.gen(function*() {
    const config = { ...testConfig(yield* tempDir, 9), postgresUrl: url }
    const base = Layer.succeed(AppConfig, config)
    const database = url === undefined ? Layer.succeed(SqlClient.SqlClient, undefined as never) : Postgres.layer({
      url,
      maxConnections: 2
    })
    const context = yield* Layer.build(
      Layer.mergeAll(Singletons.layer, Signals.layer).pipe(Layer.provide(Layer.merge(base, database)))
    )
    return { singletons: Context.get(context, Singletons), signals: Context.get(context, Signals) }
  })

describe("singletons and signals", { timeout: 60_000 }, () => {
  // One test per database, registered only on its own (no skipped test in either pass).
  if (!onPostgres) {
    it.scopedLive(
      "on SQLite: the work just runs, a signal reaches this node's listeners",
      () =>
        Effect.gen(function*() {
          const { signals, singletons } = yield* node(undefined)
          assert.strictEqual(yield* singletons.run("sweep", Effect.succeed(42)), 42)
          const heard = yield* signals.subscribe("wake")
          yield* signals.notify("wake", "m1")
          assert.strictEqual(yield* Queue.take(heard), "m1")
        })
    )
  } else {
    it.scopedLive(
      "on PostgreSQL: one holder; its session killed, the other takes over; signals cross",
      () =>
        Effect.gen(function*() {
          const url = testPostgresUrl()!
          const aScope = yield* Scope.make()
          const bScope = yield* Scope.make()
          const a = yield* Scope.extend(node(url), aScope)
          const b = yield* Scope.extend(node(url), bScope)
          const runs: Array<string> = []
          const work = (who: string) => Effect.zipRight(Effect.sync(() => runs.push(who)), Effect.never)
          yield* Effect.forkIn(a.singletons.run("meter", work("a")), aScope)
          yield* until(Effect.map(a.singletons.held, (held) => held.includes("meter") || undefined))
          yield* Effect.forkIn(b.singletons.run("meter", work("b")), bScope)
          // b has tried (a name waiting is tried at once, then every 3 s): it holds nothing.
          yield* Effect.forkIn(b.singletons.run("other", Effect.never), bScope)
          yield* until(Effect.map(b.singletons.held, (held) => held.includes("other") || undefined))
          assert.deepStrictEqual(yield* b.singletons.held, ["other"])
          assert.deepStrictEqual(runs, ["a"])

          // A signal from a reaches b's listener (and a's own, in process).
          const onB = yield* Scope.extend(b.signals.subscribe("webhooks"), bScope)
          const onA = yield* Scope.extend(a.signals.subscribe("webhooks"), aScope)
          // b's session may still be LISTENing: send until one arrives (signals are wakes, never counted).
          const heard = yield* Effect.fork(nextPayload(onB))
          yield* a.signals.notify("webhooks", "endpoint-1").pipe(
            Effect.zipRight(Effect.sleep("100 millis")),
            Effect.repeat({ while: () => Effect.map(Fiber.poll(heard), Option.isNone) })
          )
          assert.strictEqual(yield* Fiber.join(heard), "endpoint-1")
          assert.strictEqual(yield* nextPayload(onA), "endpoint-1")

          // a's session is killed: a stops its work; one of the two holds it again (a may win: it
          // reconnects within a second, b tries every 3 s).
          const admin = yield* Layer.build(Postgres.layer({ url, maxConnections: 1 }))
          const sql = Context.get(admin, SqlClient.SqlClient)
          // A bigint advisory key shows in pg_locks as its high and low 32 bits.
          const key = BigInt.asUintN(64, BigInt(lockKey("meter")))
          const killed = yield* sql<{ done: boolean }>`
        SELECT pg_terminate_backend(pid) AS done FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objsubid = 1
          AND classid = ${Number(key >> 32n)}::oid AND objid = ${Number(key & 0xffffffffn)}::oid`
          assert.deepStrictEqual(killed, [{ done: true }])
          yield* until(
            Effect.map(Effect.all([a.singletons.held, b.singletons.held]), ([onA, onB]) =>
              runs.length === 2 && onA.includes("meter") !== onB.includes("meter") || undefined)
          )

          // The holder dies (its scope closes, its session ends): the other takes over within 10 s.
          const holderIsA = (yield* a.singletons.held).includes("meter")
          const [dying, other] = holderIsA ? [aScope, bScope] : [bScope, aScope]
          const survivor = holderIsA ? b : a
          const diedAt = Date.now()
          yield* Scope.close(dying, Exit.void)
          yield* until(
            Effect.map(survivor.singletons.held, (held) =>
              held.includes("meter") || undefined),
            10_000
          )
          console.log(`singleton taken over ${Date.now() - diedAt} ms after its holder died`)
          assert.strictEqual(runs.length, 3)
          yield* Scope.close(other, Exit.void)
        })
    )
  }
})
