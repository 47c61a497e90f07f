/**
 * A node paused past its lease (docs/scale-out.md, docs/architecture.md "Hosts and leases"): three
 * `svc serve` on one PostgreSQL. Node b is stopped with SIGSTOP for longer than its 15 s lease while
 * execs for its machine are accepted through a; continued with SIGCONT, it writes nothing more and
 * exits non-zero (its lease ended while it slept). Started again, it takes its host back and runs
 * each exec once, in acceptance order.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { leaseSeconds } from "../../src/kernel/sql/HostLease.js"
import { eachRanOnceInOrder } from "../support/Bursts.js"
import { realSleep, runningMachine, sh } from "../support/Machines.js"
import { startNode, startNodes } from "../support/Nodes.js"

const execs = 6

describe("three nodes on PostgreSQL: a node paused past its lease", () => {
  it.scopedLive(
    "continued, it exits non-zero before it writes; restarted, it runs what was accepted once each",
    () =>
      Effect.gen(function*() {
        const { nodes } = yield* startNodes(["host-a", "host-b", "host-c"])
        const [a, b] = nodes as [typeof nodes[0], typeof nodes[0]]
        const id = yield* runningMachine(b.api, "paused", { host: b.host })
        const hello = yield* sh(a.api, id, "echo hello")
        assert.strictEqual(hello.status, "succeeded")

        const paused = b.child!
        const exited = Effect.async<number | null>((resume) => {
          paused.on("exit", (code) => resume(Effect.succeed(code)))
        })
        paused.kill("SIGSTOP")
        const stoppedAt = Date.now()
        const answered: Array<string> = []
        for (let n = 0; n < execs; n++) {
          const reply = yield* a.api("POST", `/v1/machines/${id}/exec`, {
            json: { shell: `echo ${n} >> log` }
          })
          assert.strictEqual(reply.status, 202, reply.text)
          answered.push(reply.body.operation_id)
        }
        // b's last renewal came before the stop: its lease has ended once this much real time passed.
        yield* realSleep(Math.max(0, stoppedAt + (leaseSeconds + 1) * 1000 - Date.now()))
        paused.kill("SIGCONT")
        const code = yield* exited
        assert.notStrictEqual(code, 0)
        b.child = undefined
        // Nothing ran while b was stopped or after it continued.
        for (const operationId of answered) {
          const operation = (yield* a.api("GET", `/v1/operations/${operationId}`)).body
          assert.strictEqual(operation.status, "pending", JSON.stringify(operation))
        }

        yield* startNode(b)
        yield* eachRanOnceInOrder(a.api, [id], [answered], [hello.id], "log")
      }),
    300_000
  )
})
