/**
 * Nothing accepted with 202 is lost: `svc serve` is killed with SIGKILL in the middle of a burst of
 * execs on several machines, restarted on the same data dir, and every operation it answered 202
 * for reaches a terminal state, exactly once and in acceptance order. Each exec appends its number
 * to a file inside its machine, so a missing, repeated or reordered run shows in the file.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { kill, serve, servedSandbox } from "../support/Binary.js"
import { eachRanOnceInOrder, execBurstKilledMidway } from "../support/Bursts.js"
import { decode, runningMachine, sh } from "../support/Machines.js"

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

      const answered = yield* execBurstKilledMidway(api, ids, perMachine, first)
      const accepted = answered.flat().length
      // Work was still queued when svc died: fewer lines on the disks than operations answered 202.
      const linesAtKill = ids.map((id) => {
        const log = NodePath.join(dataDir, "machines", id, "disk", "workspace", "log")
        return NodeFs.existsSync(log) ? NodeFs.readFileSync(log, "utf8").trim().split("\n").length : 0
      })
      assert.isBelow(linesAtKill.reduce((a, b) => a + b, 0), accepted, "operations were pending at the kill")

      yield* serve(env)
      yield* eachRanOnceInOrder(api, ids, answered)
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
