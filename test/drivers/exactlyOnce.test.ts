/**
 * The exactly-once wrapper, run by a real shell: a second run of the same operation waits for the
 * first and answers its exit code without running the command again; a claim from another boot
 * whose run is gone answers the lost exit code.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { lostExitCode, onceArgv } from "../../src/drivers/ExactlyOnce.js"
import { tempDir } from "../support/TestServer.js"

const runOnce = (home: string, operationId: string, command: string) =>
  Effect.async<number>((resume) => {
    const [file, ...args] = onceArgv(operationId, ["/bin/sh", "-c", command])
    NodeChild.spawn(file!, args, { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home }, stdio: "ignore" })
      .on("exit", (code) => resume(Effect.succeed(code ?? -1)))
  })

describe("exactly-once exec wrapper", () => {
  it.scopedLive("a repeated run waits for the first one and does not run the command again", () =>
    Effect.gen(function*() {
      const home = yield* tempDir
      const log = NodePath.join(home, "log")
      const command = `sleep 0.3; echo ran >> ${log}; exit 7`
      const [first, second] = yield* Effect.all([
        runOnce(home, "op-1", command),
        Effect.zipRight(Effect.sleep("50 millis"), runOnce(home, "op-1", command))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual([first, second], [7, 7])
      assert.strictEqual(yield* runOnce(home, "op-1", command), 7, "after the end too")
      assert.strictEqual(NodeFs.readFileSync(log, "utf8"), "ran\n")
      assert.strictEqual(yield* runOnce(home, "op-2", `echo again >> ${log}`), 0, "another operation runs")
      assert.strictEqual(NodeFs.readFileSync(log, "utf8"), "ran\nagain\n")
    }))

  it.scopedLive("a claim left by another boot with no exit code is reported lost", () =>
    Effect.gen(function*() {
      const home = yield* tempDir
      NodeFs.mkdirSync(NodePath.join(home, ".svc", "ops"), { recursive: true })
      NodeFs.writeFileSync(NodePath.join(home, ".svc", "ops", "op-3.claim"), "1 999999\n")
      assert.strictEqual(yield* runOnce(home, "op-3", `touch ${home}/ran`), lostExitCode)
      assert.isFalse(NodeFs.existsSync(NodePath.join(home, "ran")))
    }))
})
