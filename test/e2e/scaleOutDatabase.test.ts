/**
 * PostgreSQL restarted under load (docs/scale-out.md): three `svc serve` on one database, each with a
 * machine of its own host; execs are sent to the three machines through all three nodes, one after
 * another per machine (each appends its number to a file in the machine), and the database is
 * stopped like a crash midway and started again. Requests fail while it is down (never a 202 for
 * something not kept); the nodes reconnect without a restart, every 202 ends in one succeeded
 * operation, and each file holds each accepted number once, in acceptance order.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { decode, eventually, runningMachine, settled, sh } from "../support/Machines.js"
import { startNodes } from "../support/Nodes.js"

const perMachine = 30

describe("three nodes on PostgreSQL: the database restarted under load", () => {
  it.scopedLive(
    "the nodes reconnect; nothing accepted is lost or run twice",
    () =>
      Effect.gen(function*() {
        const { nodes, postgres } = yield* startNodes(["host-a", "host-b", "host-c"])
        const ids = yield* Effect.forEach(nodes, (node) =>
          runningMachine(node.api, `on-${node.host}`, { host: node.host }), {
          concurrency: "unbounded"
        })

        // Per machine, exec n goes through node n % 3; a failed request is not accepted, and the
        // next number is tried (so a file may skip a number, never repeat one or go back).
        const answered = ids.map(() =>
          new Map<number, string>()
        )
        const failed = ids.map(() => 0)
        const count = () => answered.reduce((sum, map) => sum + map.size, 0)
        const burst = Effect.forEach(ids, (id, index) =>
          Effect.gen(function*() {
            for (let n = 0; n < perMachine; n++) {
              const through = nodes[n % nodes.length]!
              const reply = yield* Effect.exit(through.api("POST", `/v1/machines/${id}/exec`, {
                json: { shell: `echo ${n} >> log && sleep 0.01` }
              }))
              if (Exit.isSuccess(reply) && reply.value.status === 202) {
                answered[index]!.set(n, reply.value.body.operation_id)
              } else {
                failed[index]!++
              }
            }
          }), { concurrency: "unbounded", discard: true })
        const fiber = yield* Effect.fork(burst)
        yield* eventually(Effect.sync(() => count() >= (ids.length * perMachine) / 3 || undefined))
        yield* postgres.stop
        const atStop = count()
        yield* postgres.start
        yield* Fiber.join(fiber)
        assert.isBelow(atStop, ids.length * perMachine, "the database stopped in the middle of the burst")
        console.log(`accepted ${count()} of ${ids.length * perMachine}; refused while down: ${failed.join(", ")}`)

        for (const [index, id] of ids.entries()) {
          // Every node answers again, and the machine runs what it accepted.
          for (const node of nodes) {
            const read = yield* node.api("GET", `/v1/machines/${id}`)
            assert.strictEqual(read.status, 200, `${node.host}: ${read.text}`)
          }
          for (const operationId of answered[index]!.values()) {
            const operation = yield* settled(nodes[index]!.api, operationId, 90_000)
            assert.strictEqual(operation.status, "succeeded", JSON.stringify(operation))
          }
          const execs = (yield* nodes[0]!.api("GET", `/v1/machines/${id}/operations?limit=100`)).body.items
            .filter((operation: any) => operation.kind === "exec")
          for (const operation of execs) yield* settled(nodes[0]!.api, operation.id, 90_000)
          const log = yield* sh(nodes[1]!.api, id, "cat log")
          const lines = decode(log.exec_result.stdout_base64).trim().split("\n").map(Number)
          // Once each, in order: strictly increasing; every accepted number is there.
          for (let i = 1; i < lines.length; i++) assert.isBelow(lines[i - 1]!, lines[i]!, `machine ${index}: ${lines}`)
          assert.includeMembers(lines, [...answered[index]!.keys()], `machine ${index}`)
          assert.strictEqual(lines.length, execs.length, `machine ${index}: one line per exec operation`)
        }
      }),
    240_000
  )
})
