/**
 * Time-dependent machine behaviour under TestClock: auto-stop, idle sleep, exec timeouts and the
 * retry schedule of uncertain operations. The server is built in the test's scope, so its timers
 * run on the TestClock; real work (a sandbox booting) is awaited with real timers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { DriverError, type MachineDriverShape } from "../../src/drivers/MachineDriver.js"
import { client } from "../support/Http.js"
import { eventually, reached, runningMachine, settled, sh } from "../support/Machines.js"
import { asleepUntil } from "../support/Services.js"
import { type DriverWrapper, startServer } from "../support/TestServer.js"

const setup = (wrapDriver?: DriverWrapper) =>
  Effect.gen(function*() {
    const server = yield* startServer({ runtime: "sandbox" }, wrapDriver)
    const owner = yield* server.bootstrap("owner@example.com")
    return client(server.url, { key: owner.api_key })
  })

const stateIs = (api: ReturnType<typeof client>, id: string, state: string) =>
  eventually(
    Effect.map(api("GET", `/v1/machines/${id}`), (reply) => reply.body.state === state ? reply.body : undefined)
  )

const clockNow = TestClock.currentTimeMillis

// Each test boots sandboxes: slow on a loaded host.
describe("timers", { timeout: 90_000 }, () => {
  it.scoped("auto_stop_seconds stops the machine that long after its start, with stop_reason auto_stop", () =>
    Effect.gen(function*() {
      const api = yield* setup()
      const id = yield* runningMachine(api, "auto", { auto_stop_seconds: 60 })
      const due = (yield* clockNow) + 60_000
      yield* TestClock.adjust("59 seconds")
      yield* asleepUntil(due) // the timers' fiber waits for the machine's time
      assert.strictEqual((yield* api("GET", `/v1/machines/${id}`)).body.state, "running")
      yield* TestClock.adjust("2 seconds")
      const machine = yield* stateIs(api, id, "stopped")
      assert.strictEqual(machine.last_stop_reason, "auto_stop")
      const [stop] = (yield* api("GET", `/v1/machines/${id}/operations`)).body.items
      assert.strictEqual(stop.kind, "stop")
      assert.strictEqual(stop.stop_reason, "auto_stop")
      // Nothing more happens for the stopped machine however long it waits: a later machine's timer,
      // 10 minutes on, is acted upon alone.
      const later = yield* runningMachine(api, "later", { auto_stop_seconds: 600 })
      yield* TestClock.adjust("10 minutes")
      yield* stateIs(api, later, "stopped")
      assert.strictEqual((yield* api("GET", `/v1/machines/${id}/operations`)).body.items.length, 2)
    }))

  it.scoped("idle_sleep_seconds counts from the last exec", () =>
    Effect.gen(function*() {
      const api = yield* setup()
      const id = yield* runningMachine(api, "sleepy", { idle_sleep_seconds: 30 })
      yield* TestClock.adjust("20 seconds")
      yield* sh(api, id, "true")
      const due = (yield* clockNow) + 30_000
      yield* TestClock.adjust("20 seconds")
      yield* asleepUntil(due) // 30 s from the exec
      assert.strictEqual((yield* api("GET", `/v1/machines/${id}`)).body.state, "running")
      yield* TestClock.adjust("11 seconds")
      const machine = yield* stateIs(api, id, "stopped")
      assert.strictEqual(machine.last_stop_reason, "idle_sleep")
    }))

  it.scoped("an exec past its timeout_seconds is killed and says timed_out", () =>
    Effect.gen(function*() {
      const api = yield* setup()
      const id = yield* runningMachine(api, "slow")
      const accepted = yield* api("POST", `/v1/machines/${id}/exec`, {
        json: { shell: "echo begun; sleep 600", timeout_seconds: 5 }
      })
      yield* reached(api, accepted.body.operation_id, "running")
      yield* eventually(Effect.map(
        api("GET", `/v1/machines/${id}/operations`),
        (reply) => reply.body.items.length > 0 ? true : undefined
      ))
      yield* asleepUntil((yield* clockNow) + 5_000) // its timeout is set
      yield* TestClock.adjust("6 seconds")
      const operation = yield* settled(api, accepted.body.operation_id)
      assert.isTrue(operation.exec_result.timed_out)
      assert.strictEqual(operation.exec_result.exit_code, -1)
      // The machine goes on: the next exec runs at once.
      const next = yield* sh(api, id, "echo next")
      assert.strictEqual(next.exec_result.exit_code, 0)
    }))

  it.scoped("an uncertain operation is re-applied on a capped exponential schedule until it settles", () =>
    Effect.gen(function*() {
      let failures = 2
      const flakyStart: DriverWrapper = (inner: MachineDriverShape) => ({
        ...inner,
        start: (spec) =>
          failures-- > 0 ? Effect.fail(new DriverError({ message: "host did not answer" })) : inner.start(spec)
      })
      const api = yield* setup(flakyStart)
      const accepted = yield* api("POST", "/v1/machines", { json: { name: "flaky" } })
      const first = yield* reached(api, accepted.body.operation_id, "uncertain")
      assert.strictEqual(first.attempt_count, 1)
      const retryAt = (yield* clockNow) + 1_000
      yield* asleepUntil(retryAt)
      yield* TestClock.adjust("999 millis")
      assert.strictEqual((yield* api("GET", `/v1/operations/${accepted.body.operation_id}`)).body.attempt_count, 1)
      yield* TestClock.adjust("1 millis")
      yield* eventually(Effect.map(
        api("GET", `/v1/operations/${accepted.body.operation_id}`),
        (reply) => reply.body.attempt_count === 2 && reply.body.status === "uncertain" ? true : undefined
      ))
      yield* asleepUntil((yield* clockNow) + 2_000) // the next retry is set
      yield* TestClock.adjust("2 seconds")
      const done = yield* settled(api, accepted.body.operation_id)
      assert.strictEqual(done.status, "succeeded")
      assert.strictEqual(done.attempt_count, 3)
      assert.strictEqual((yield* api("GET", `/v1/machines/${accepted.body.machine_id}`)).body.state, "running")
    }))

  it.scoped("a boot that is not observed afterwards is a correlation_miss, and the machine failed", () =>
    Effect.gen(function*() {
      const blind: DriverWrapper = (inner) => ({
        ...inner,
        observe: (id) => Effect.map(inner.observe(id), (seen) => ({ ...seen, running: false, bootId: null }))
      })
      const api = yield* setup(blind)
      const accepted = yield* api("POST", "/v1/machines", { json: { name: "blind" } })
      const operation = yield* settled(api, accepted.body.operation_id)
      assert.strictEqual(operation.status, "correlation_miss")
      assert.strictEqual((yield* api("GET", `/v1/machines/${accepted.body.machine_id}`)).body.state, "failed")
    }))
})
