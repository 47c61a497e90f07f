/**
 * Nothing accepted with 202 is lost: `svc serve` is killed with SIGKILL in the middle of a burst of
 * execs on several machines, restarted on the same data dir, and every operation it answered 202
 * for reaches a terminal state, exactly once and in acceptance order. Each exec appends its number
 * to a file inside its machine, so a missing, repeated or reordered run shows in the file.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { kill, serve, servedSandbox } from "../support/Binary.js"
import { decode, eventually, runningMachine, settled, sh } from "../support/Machines.js"

const machines = 3
const perMachine = 40

describe("durability", () => {
  it.scopedLive("SIGKILL during a burst of operations loses nothing and repeats nothing", () =>
    Effect.gen(function*() {
      const { api, dataDir, env, first } = yield* servedSandbox
      const ids = yield* Effect.all(
        Array.from({ length: machines }, (_, index) => runningMachine(api, `m${index}`)),
        { concurrency: "unbounded" }
      )

      // Per machine, requests go one after another, so acceptance order is the order of `n`.
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
      yield* eventually(Effect.sync(() => answered.flat().length >= (machines * perMachine) / 2 ? true : undefined))
      yield* kill(first)
      yield* Fiber.join(fiber)
      const accepted = answered.flat().length
      assert.isBelow(accepted, machines * perMachine, "the kill came in the middle of the burst")
      // Work was still queued when svc died: fewer lines on the disks than operations answered 202.
      const linesAtKill = ids.map((id) => {
        const log = NodePath.join(dataDir, "machines", id, "disk", "workspace", "log")
        return NodeFs.existsSync(log) ? NodeFs.readFileSync(log, "utf8").trim().split("\n").length : 0
      })
      assert.isBelow(linesAtKill.reduce((a, b) => a + b, 0), accepted, "operations were pending at the kill")

      yield* serve(env)
      for (const [index, id] of ids.entries()) {
        for (const operationId of answered[index]!) {
          const operation = yield* settled(api, operationId, 60_000)
          assert.strictEqual(operation.status, "succeeded", JSON.stringify(operation))
          assert.strictEqual(operation.exec_result.exit_code, 0)
        }
        // An exec whose 202 was lost with the process may exist too: it is the next number.
        const execs = (yield* api("GET", `/v1/machines/${id}/operations?limit=100`)).body.items
          .filter((operation: any) => operation.kind === "exec")
        for (const operation of execs) yield* settled(api, operation.id, 60_000)
        assert.includeMembers(execs.map((operation: any) => operation.id), answered[index]!)
        assert.oneOf(execs.length - answered[index]!.length, [0, 1])
        const log = yield* sh(api, id, "cat /workspace/log")
        const lines = decode(log.exec_result.stdout_base64).trim().split("\n").map(Number)
        assert.deepStrictEqual(lines, Array.from({ length: execs.length }, (_, n) => n), `machine ${index}`)
      }
    }), 180_000)

  it.scopedLive(
    "machines keep running across a restart of svc; one that ended meanwhile is found stopped",
    () =>
      Effect.gen(function*() {
        const { api, dataDir, env, first } = yield* servedSandbox
        const kept = yield* runningMachine(api, "kept")
        const lost = yield* runningMachine(api, "lost")
        yield* sh(api, kept, "sleep 1000 >/dev/null 2>&1 & echo $! > /tmp/bg.pid")
        const keptBoot = (yield* api("GET", `/v1/machines/${kept}`)).body.boot_id
        yield* kill(first)
        const record = JSON.parse(NodeFs.readFileSync(NodePath.join(dataDir, "machines", lost, "run.json"), "utf8"))
        process.kill(record.pid, "SIGKILL")

        yield* serve(env)
        const keptNow = (yield* api("GET", `/v1/machines/${kept}`)).body
        assert.strictEqual(keptNow.state, "running")
        assert.strictEqual(keptNow.boot_id, keptBoot, "adopted, not rebooted")
        const alive = yield* sh(api, kept, "kill -0 $(cat /tmp/bg.pid) && echo alive")
        assert.strictEqual(decode(alive.exec_result.stdout_base64), "alive\n")
        const lostNow = (yield* api("GET", `/v1/machines/${lost}`)).body
        assert.strictEqual(lostNow.state, "stopped")
        assert.isNull(lostNow.boot_id)
      }),
    120_000
  )
})
