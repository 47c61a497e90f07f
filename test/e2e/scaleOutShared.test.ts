/**
 * State shared through the database across nodes (docs/scale-out.md): three `svc serve` on one
 * PostgreSQL. The same Idempotency-Key sent to every node at once makes one operation; creates sent
 * to every node at once never take an organization past its running-machines limit.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { settled } from "../support/Machines.js"
import { startNodes } from "../support/Nodes.js"

const limit = 3

describe("three nodes on PostgreSQL: state shared through the database", () => {
  it.scopedLive(
    "one Idempotency-Key sent to all nodes at once: one operation; racing creates stay within the limit",
    () =>
      Effect.gen(function*() {
        const { nodes } = yield* startNodes(["host-a", "host-b", "host-c"], {
          SVC_LIMITS: JSON.stringify({ unlimited: { concurrent_machines: limit } })
        })

        // The same key, the same body, to the three nodes at once, a few times over.
        for (let round = 0; round < 5; round++) {
          const replies = yield* Effect.forEach(nodes, (node) =>
            node.api("POST", "/v1/machines", {
              json: { name: `idem${round}`, start: false },
              headers: { "idempotency-key": `key-${round}` }
            }), { concurrency: "unbounded" })
          for (const reply of replies) assert.strictEqual(reply.status, 202, reply.text)
          const operations = new Set(replies.map((reply) => reply.body.operation_id))
          const machines = new Set(replies.map((reply) => reply.body.machine_id))
          assert.strictEqual(operations.size, 1, `round ${round}: ${[...operations]}`)
          assert.strictEqual(machines.size, 1, `round ${round}: ${[...machines]}`)
          assert.strictEqual((yield* settled(nodes[0]!.api, [...operations][0]!)).status, "succeeded")
        }
        const listed = (yield* nodes[1]!.api("GET", "/v1/machines?limit=100")).body.items
        assert.strictEqual(listed.length, 5)

        // Running creates from all nodes at once, four times the limit: at most `limit` are accepted.
        const racing = yield* Effect.forEach(Array.from({ length: limit * 4 }, (_, i) => i), (i) =>
          nodes[i % nodes.length]!.api("POST", "/v1/machines", { json: { name: `race${i}` } }), {
          concurrency: "unbounded"
        })
        const accepted = racing.filter((reply) =>
          reply.status === 202
        )
        for (const reply of racing) {
          if (reply.status !== 202) assert.oneOf(reply.status, [402, 409, 429], reply.text)
        }
        assert.isAtMost(accepted.length, limit)
        assert.isAtLeast(accepted.length, 1)
        for (const reply of accepted) yield* settled(nodes[2]!.api, reply.body.operation_id)
        const running = (yield* nodes[0]!.api("GET", "/v1/machines?limit=100")).body.items
          .filter((machine: any) => machine.state !== "stopped")
        assert.isAtMost(running.length, limit, JSON.stringify(running.map((m: any) => [m.name, m.state])))
      }),
    360_000
  )
})
