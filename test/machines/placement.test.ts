/**
 * Placement (docs/scale-out.md "Placement"): a create without `host` goes to the live host with the
 * fewest running machines that has room, ties to the accepting node's host; `host` is honoured when
 * live and refused (422 on `host`, nothing recorded) when unknown, expired or malformed; a fork
 * stays on its source's host. On PostgreSQL two service contexts share one database, with extra
 * `hosts` rows standing for a full, an expired and an idle host (no node drives them: what is
 * placed there waits). On SQLite there is one host, this node's, whatever else the table holds.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { AppConfig, type AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import { Machines } from "../../src/machines/Machines.js"
import { Snapshots } from "../../src/snapshots/Snapshots.js"
import { newMachine, owner, services } from "../support/Services.js"

const twoNodes = (overrides: Partial<AppConfigShape> = {}) =>
  Effect.gen(function*() {
    const a = yield* services({ hostId: "node-a", ...overrides })
    const url = Context.get(a, AppConfig).postgresUrl
    const b = url === undefined ? undefined : yield* services({ hostId: "node-b", ...overrides, postgresUrl: url })
    return { a, b }
  })

const sqlOf = (context: Context.Context<any>) => Context.get(context, SqlClient.SqlClient)

/** A `hosts` row no node drives: its lease ends `leaseMillis` from now (negative: expired). */
const fakeHost = (context: Context.Context<any>, hostId: string, capacity: number | null, leaseMillis: number) =>
  Effect.orDie(sqlOf(context)`INSERT INTO hosts ${
    sqlOf(context).insert({
      host_id: hostId,
      internal_url: `http://${hostId}.invalid`,
      capacity,
      version: "test",
      epoch: 1,
      lease_expires_at: Date.now() + leaseMillis,
      node_pid: 1,
      started_at: Date.now()
    })
  }`)

const hostOf = (context: Context.Context<any>, machineId: string) =>
  Effect.map(
    Effect.orDie(sqlOf(context)<{ host_id: string }>`SELECT host_id FROM machines WHERE id = ${machineId}`),
    (rows) => rows[0]!.host_id
  )

const count = (context: Context.Context<any>, table: string) =>
  Effect.map(
    Effect.orDie(sqlOf(context).unsafe<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`)),
    (rows) => Number(rows[0]!.n)
  )

/** The 422 a create fails with: its field errors, or the outcome's tag when it is not a 422. */
const refusal = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (error) =>
    error._tag === "invalid_request"
      ? (error as unknown as { field_errors: ReadonlyArray<{ field: string }> }).field_errors.map((e) => e.field)
      : error._tag)

const hour = 3600_000

describe("placement", () => {
  it.scoped(
    "a create goes to the live host with the fewest running machines and room, ties to its own",
    () =>
      Effect.gen(function*() {
        const { a, b } = yield* twoNodes()
        if (b === undefined) return
        yield* fakeHost(a, "h-full", 0, hour)
        yield* fakeHost(a, "h-gone", null, -1000)
        yield* fakeHost(a, "h-idle", null, hour)
        const alice = yield* owner(a, "alice@example.com")
        const placed: Array<string> = []
        for (let i = 0; i < 4; i++) {
          const answer = yield* Context.get(a, Machines).create(alice, newMachine(`m${i}`, true))
          placed.push(yield* hostOf(a, answer.machine_id))
        }
        // All empty: its own host; then the idle ones by id; then its own again.
        assert.deepStrictEqual(placed, ["node-a", "h-idle", "node-b", "node-a"])
        // Through b, with all at one but a at two: b's own host wins the tie with h-idle.
        const fromB = yield* Context.get(b, Machines).create(alice, newMachine("m-b", true))
        assert.strictEqual(yield* hostOf(b, fromB.machine_id), "node-b")
      }),
    120_000
  )

  it.scoped(
    "with no room anywhere, the least loaded live host takes it, never a drained one (capacity 0)",
    () =>
      Effect.gen(function*() {
        const { a, b } = yield* twoNodes({ hostCapacity: 1 })
        if (b === undefined) return
        yield* fakeHost(a, "h-drained", 0, hour)
        const alice = yield* owner(a, "alice@example.com")
        const placed: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const answer = yield* Context.get(a, Machines).create(alice, newMachine(`d${i}`, true))
          placed.push(yield* hostOf(a, answer.machine_id))
        }
        assert.deepStrictEqual(placed, ["node-a", "node-b", "node-a"])
        // Naming the drained host does not undo the drain: a 422 on `host`, nothing recorded.
        const before = yield* count(a, "machines")
        assert.deepStrictEqual(
          yield* refusal(Context.get(a, Machines).create(alice, { ...newMachine("d-named", true), host: "h-drained" })),
          ["host"]
        )
        assert.strictEqual(yield* count(a, "machines"), before)
      }),
    120_000
  )

  it.scoped("creates racing from two nodes spread evenly and never overfill a host", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoNodes()
      if (b === undefined) return
      yield* fakeHost(a, "h-two", 2, hour)
      yield* fakeHost(a, "h-gone", null, -1000)
      const alice = yield* owner(a, "alice@example.com")
      const answers = yield* Effect.all(
        Array.from({ length: 9 }, (_, i) =>
          Context.get(i % 2 === 0 ? a : b, Machines).create(alice, newMachine(`r${i}`, true))),
        { concurrency: "unbounded" }
      )
      const perHost = new Map<string, number>()
      for (const answer of answers) {
        const host = yield* hostOf(a, answer.machine_id)
        perHost.set(host, (perHost.get(host) ?? 0) + 1)
      }
      assert.strictEqual(perHost.get("h-two"), 2)
      assert.isUndefined(perHost.get("h-gone"))
      // Without the lock two racing creates could read the same counts and overfill h-two, or pile up.
      assert.strictEqual((perHost.get("node-a") ?? 0) + (perHost.get("node-b") ?? 0), 7)
      assert.isAtMost(Math.abs((perHost.get("node-a") ?? 0) - (perHost.get("node-b") ?? 0)), 1)
    }), 120_000)

  it.scoped(
    "`host` is honoured when live; unknown, expired, malformed or foreign hosts are 422 and change nothing",
    () =>
      Effect.gen(function*() {
        const { a, b } = yield* twoNodes()
        yield* fakeHost(a, "h-gone", null, -1000)
        yield* fakeHost(a, "h-live", null, hour)
        const alice = yield* owner(a, "alice@example.com")
        const machines = Context.get(a, Machines)
        const create = (name: string, host: string) => machines.create(alice, { ...newMachine(name), host })
        const own = yield* create("mine", "node-a")
        assert.strictEqual(yield* hostOf(a, own.machine_id), "node-a")
        const before = [yield* count(a, "machines"), yield* count(a, "operations")]
        assert.deepStrictEqual(yield* refusal(create("x1", "nowhere")), ["host"])
        assert.deepStrictEqual(yield* refusal(create("x2", "h-gone")), ["host"])
        assert.deepStrictEqual(yield* refusal(create("x3", "Not A Host!")), ["host"])
        if (b === undefined) {
          // SQLite: one host, this node's; another row in the table is no host of this service.
          assert.deepStrictEqual(yield* refusal(create("x4", "h-live")), ["host"])
        } else {
          const there = yield* create("there", "h-live")
          assert.strictEqual(yield* hostOf(a, there.machine_id), "h-live")
          const onB = yield* create("on-b", "node-b")
          assert.strictEqual(yield* hostOf(b, onB.machine_id), "node-b")
          before[0]! += 2
          before[1]! += 2
        }
        assert.deepStrictEqual([yield* count(a, "machines"), yield* count(a, "operations")], before)
      }),
    120_000
  )

  it.scoped("a fork stays on its source's host, whichever node accepts it", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoNodes()
      const alice = yield* owner(a, "alice@example.com")
      const sourceHost = b === undefined ? "node-a" : "node-b"
      const source = yield* Context.get(a, Machines).create(alice, { ...newMachine("source"), host: sourceHost })
      // Accepted on a (an idle host a would otherwise choose), placed where the source's disk is.
      const fork = yield* Context.get(a, Snapshots).fork(alice, source.machine_id, { name: "fork", start: false })
      assert.strictEqual(yield* hostOf(a, fork.machine_id), sourceHost)
    }), 120_000)
})
