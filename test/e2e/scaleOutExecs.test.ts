/**
 * Operations accepted on other nodes while the owner's node dies (docs/scale-out.md): three `svc
 * serve` on one PostgreSQL. Execs to machines of host b (created through node b) are accepted through
 * a and c, one after another per machine (each appends its number to a file in the machine); b is
 * killed with SIGKILL a third of the way through and started again at two thirds. a and c answer
 * every request throughout; every 202 ends in one succeeded operation, and each machine's file holds
 * each number once, in acceptance order.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { eachRanOnceInOrder } from "../support/Bursts.js"
import { eventually, runningMachine, sh } from "../support/Machines.js"
import { killNode, startNode, startNodes } from "../support/Nodes.js"

const machines = 2
const perMachine = 30

describe("three nodes on PostgreSQL: the owner's node killed during execs accepted elsewhere", () => {
  it.scopedLive(
    "a and c keep answering; every exec runs once, in acceptance order, once b is back",
    () =>
      Effect.gen(function*() {
        const { nodes } = yield* startNodes(["host-a", "host-b", "host-c"])
        const [a, b, c] = nodes as [typeof nodes[0], typeof nodes[0], typeof nodes[0]]
        const ids = yield* Effect.all(
          Array.from({ length: machines }, (_, index) => runningMachine(b.api, `b${index}`, { host: "host-b" })),
          { concurrency: "unbounded" }
        )
        for (const id of ids) {
          assert.strictEqual((yield* a.api("GET", `/v1/machines/${id}`)).body.host_id, "host-b")
        }
        const hello = yield* sh(a.api, ids[0]!, "echo hello")
        assert.strictEqual(hello.status, "succeeded")

        // One exec after another per machine, alternating between a and c.
        const answered = ids.map(() => [] as Array<string>)
        const count = () => answered.flat().length
        const burst = Effect.forEach(ids, (id, index) =>
          Effect.gen(function*() {
            for (let n = 0; n < perMachine; n++) {
              const through = n % 2 === 0 ? a : c
              const reply = yield* through.api("POST", `/v1/machines/${id}/exec`, {
                json: { shell: `echo ${n} >> log && sleep 0.01` }
              })
              assert.strictEqual(reply.status, 202, `${through.host}: ${reply.text}`)
              answered[index]!.push(reply.body.operation_id)
            }
          }), { concurrency: "unbounded", discard: true })
        const fiber = yield* Effect.fork(burst)
        const total = machines * perMachine
        yield* eventually(Effect.sync(() => count() >= total / 3 || undefined))
        yield* killNode(b)
        const atKill = count()
        yield* eventually(Effect.sync(() => count() >= (total * 2) / 3 || undefined))
        // Reads through a and c answer from the database while b is gone.
        const read = yield* c.api("GET", `/v1/machines/${ids[1]}`)
        assert.strictEqual(read.status, 200, read.text)
        yield* startNode(b)
        const atRestart = count()
        yield* Fiber.join(fiber)
        assert.strictEqual(count(), total)
        assert.isBelow(atKill, total, "the kill came in the middle of the burst")
        assert.isBelow(atKill, atRestart, "execs were accepted while b was gone")

        yield* eachRanOnceInOrder(c.api, ids, answered, [hello.id], "log")
      }),
    360_000
  )
})
