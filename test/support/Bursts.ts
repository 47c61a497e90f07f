/**
 * The kill -9 burst of the durability tests (on SQLite: test/e2e/durability.test.ts; on PostgreSQL:
 * test/e2e/postgres.test.ts): execs that append their number to /workspace/log, one after another
 * per machine (so acceptance order is the order of the numbers), and `svc serve` killed with SIGKILL
 * once half of them are answered.
 */
import { assert } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import type * as NodeChild from "node:child_process"
import { kill } from "./Binary.js"
import { type Api, decode, eventually, settled, sh } from "./Machines.js"

/** The operation ids answered 202 per machine before `served` was killed in the middle of the burst. */
export const execBurstKilledMidway = (
  api: Api,
  ids: ReadonlyArray<string>,
  perMachine: number,
  served: NodeChild.ChildProcess
) =>
  Effect.gen(function*() {
    const answered = ids.map(() => [] as Array<string>)
    const burst = Effect.forEach(ids, (id, index) =>
      Effect.gen(function*() {
        for (let n = 0; n < perMachine; n++) {
          const reply = yield* Effect.exit(api("POST", `/v1/machines/${id}/exec`, {
            json: { shell: `echo ${n} >> /workspace/log; sleep 0.01` }
          }))
          if (Exit.isFailure(reply)) return // the server is gone
          assert.strictEqual(reply.value.status, 202)
          answered[index]!.push(reply.value.body.operation_id)
        }
      }), { concurrency: "unbounded", discard: true })
    const fiber = yield* Effect.fork(burst)
    yield* eventually(Effect.sync(() => answered.flat().length >= (ids.length * perMachine) / 2 ? true : undefined))
    yield* kill(served)
    yield* Fiber.join(fiber)
    assert.isBelow(answered.flat().length, ids.length * perMachine, "the kill came in the middle of the burst")
    return answered
  })

/**
 * After the restart: every exec answered 202 succeeded, and each machine's log holds each number
 * once, in order. An exec whose 202 was lost with the process may exist too: it is the next number.
 * `other` names execs of the test's own that are not part of the burst; `file` is where the burst
 * appended (the process driver has no /workspace: a path relative to the machine's home there).
 */
export const eachRanOnceInOrder = (
  api: Api,
  ids: ReadonlyArray<string>,
  answered: ReadonlyArray<ReadonlyArray<string>>,
  other: ReadonlyArray<string> = [],
  file = "/workspace/log"
) =>
  Effect.gen(function*() {
    for (const [index, id] of ids.entries()) {
      for (const operationId of answered[index]!) {
        const operation = yield* settled(api, operationId, 60_000)
        assert.strictEqual(operation.status, "succeeded", JSON.stringify(operation))
        assert.strictEqual(operation.exec_result.exit_code, 0)
      }
      const execs = (yield* api("GET", `/v1/machines/${id}/operations?limit=100`)).body.items
        .filter((operation: any) => operation.kind === "exec" && !other.includes(operation.id))
      for (const operation of execs) yield* settled(api, operation.id, 60_000)
      assert.includeMembers(execs.map((operation: any) => operation.id), [...answered[index]!])
      assert.oneOf(execs.length - answered[index]!.length, [0, 1])
      const log = yield* sh(api, id, `cat ${file}`)
      const lines = decode(log.exec_result.stdout_base64).trim().split("\n").map(Number)
      assert.deepStrictEqual(lines, Array.from({ length: execs.length }, (_, n) => n), `machine ${index}`)
    }
  })
