/**
 * Driver calls that the driver contract (test/drivers/contract.ts) once bounded in time, on the
 * sandbox driver, in-process: an exec whose background process keeps its output open, the
 * interruption of a running exec, and a forced stop of a machine whose process ignores SIGTERM.
 * Baselines, same run and machine: an exec of `true`, and a forced stop of the machine idle.
 *
 *   node --import tsx bench/driver-calls.ts [rounds=10]
 */
import { Deferred, Effect, Fiber } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { MachineDriver, type MachineSpec } from "../src/drivers/MachineDriver.js"
import * as SandboxDriver from "../src/drivers/sandbox/SandboxDriver.js"

const rounds = Number(process.argv[2] ?? 10)
const dataDir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-bench-driver-"))
const spec: MachineSpec = { id: "bench-driver", size: "small", image: "default", internetAccess: false, env: {} }
const sh = (script: string) => ["/bin/sh", "-c", script]

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const started = performance.now()
    yield* effect
    return performance.now() - started
  })
const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const program = Effect.gen(function*() {
  const driver = yield* MachineDriver
  yield* driver.create(spec)
  yield* driver.start(spec)
  const exec = (script: string) => driver.exec(spec.id, { argv: sh(script) }, () => Effect.void)
  const figures: Record<string, Array<number>> = {
    "exec of true (baseline)": [],
    "exec beside a background holder": [],
    "interrupt of a running exec": [],
    "forced stop, idle (baseline)": [],
    "forced stop, SIGTERM ignored": []
  }
  for (let round = 0; round < rounds; round++) {
    figures["exec of true (baseline)"]!.push(yield* timed(exec("true")))
    figures["exec beside a background holder"]!.push(yield* timed(exec("sleep 600 & echo started")))
    const ready = yield* Deferred.make<void>()
    const fiber = yield* Effect.fork(
      driver.exec(
        spec.id,
        { argv: sh("echo ready; exec sleep 600") },
        (_, chunk) => Buffer.from(chunk).toString().includes("ready") ? Deferred.succeed(ready, undefined) : Effect.void
      )
    )
    yield* Deferred.await(ready)
    figures["interrupt of a running exec"]!.push(yield* timed(Fiber.interrupt(fiber)))
    yield* driver.stop(spec.id, { force: true })
    yield* driver.start(spec)
    figures["forced stop, idle (baseline)"]!.push(yield* timed(driver.stop(spec.id, { force: true })))
    yield* driver.start(spec)
    yield* exec("nohup sh -c \"trap '' TERM; while :; do sleep 0.05; done\" >/dev/null 2>&1 &")
    figures["forced stop, SIGTERM ignored"]!.push(yield* timed(driver.stop(spec.id, { force: true })))
    yield* driver.start(spec)
  }
  yield* driver.destroy(spec.id)
  const exec0 = median(figures["exec of true (baseline)"]!)
  const stop0 = median(figures["forced stop, idle (baseline)"]!)
  console.log(`sandbox driver, median of ${rounds}:`)
  for (const [name, values] of Object.entries(figures)) {
    const base = name.startsWith("forced stop") ? stop0 : exec0
    console.log(
      `${name.padEnd(34)} ${median(values).toFixed(1).padStart(7)} ms  ${
        (median(values) / base).toFixed(2)
      } x its baseline`
    )
  }
})

Effect.runPromise(Effect.provide(program, SandboxDriver.layer({ dataDir }))).then(
  () => NodeFs.rmSync(dataDir, { recursive: true, force: true }),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
