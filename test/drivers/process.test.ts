import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import * as NodePath from "node:path"
import { procStat } from "../../src/drivers/HostProcess.js"
import { MachineDriver } from "../../src/drivers/MachineDriver.js"
import * as ProcessDriver from "../../src/drivers/process/ProcessDriver.js"
import { driverContract, freshId, quiet, run, sh, specOf, tempDataDir, withMachine } from "./contract.js"

const makeLayer = (dataDir: string) => quiet(ProcessDriver.layer({ dataDir }))

driverContract("process", makeLayer)

describe("process driver", () => {
  const dir = tempDataDir("process-only", makeLayer)

  it.live("warns when it is built that it isolates nothing", () =>
    Effect.gen(function*() {
      const logged: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => logged.push(`${logLevel.label} ${String(message)}`))
      )
      const driver = yield* Effect.provide(
        MachineDriver,
        Layer.provide(ProcessDriver.layer({ dataDir: dir.dataDir }), capture)
      )
      assert.isFalse(driver.isolates)
      assert.strictEqual(logged.length, 1)
      assert.match(logged[0]!, /^WARN .*nothing is isolated/)
    }))

  it.live("isolates nothing and says so: commands are host processes with the machine's disk as home", () =>
    Effect.gen(function*() {
      const spec = specOf(freshId())
      yield* withMachine(spec, (driver, { id }) =>
        Effect.gen(function*() {
          assert.isFalse(driver.isolates)
          const ran = yield* run(driver, id, sh("echo $HOME; echo $SVC_MACHINE_ID; echo $$"))
          const [home, marker, pid] = ran.stdout.trim().split("\n")
          assert.strictEqual(home, NodePath.join(dir.dataDir, "machines", id, "disk", "root"))
          assert.strictEqual(marker, id)
          assert.isAbove(Number(pid), 1) // a host pid
        }))
    }).pipe(Effect.provide(makeLayer(dir.dataDir))))

  it.live("stop ends a process that left the exec's process group (setsid)", () =>
    Effect.gen(function*() {
      const spec = specOf(freshId())
      yield* withMachine(spec, (driver, { id }) =>
        Effect.gen(function*() {
          yield* run(
            driver,
            id,
            sh("setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' >/dev/null 2>&1 < /dev/null &")
          )
          // The escaped process writes its pid in the background: look until it has.
          let pid = 0
          while (!pid) pid = Number((yield* run(driver, id, sh("cat escaped.pid 2>/dev/null"))).stdout)
          assert.isTrue(alive(pid))
          yield* driver.stop(id, { force: false })
          assert.isFalse(alive(pid))
        }))
    }).pipe(Effect.provide(makeLayer(dir.dataDir))))
})

/** The process runs (a zombie waiting for its parent does not). */
const alive = (pid: number) => {
  const stat = procStat(pid)
  return stat !== undefined && stat.state !== "Z"
}
