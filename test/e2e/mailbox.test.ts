/**
 * No operation holds a machine's mailbox (extensions.md §4): an operation stuck `uncertain` (a
 * driver action that keeps failing) is ended by a cancel, and a forced stop or a delete cancels
 * what was accepted before it and runs next. Through the typed client, on the sandbox driver with
 * one action made to fail every time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DriverError } from "../../src/drivers/MachineDriver.js"
import { makeClient } from "../../src/index.js"
import { eventually } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

/**
 * Every exec whose command is `stuck` fails in the driver: the operation can never settle. One
 * whose command is `impossible` fails as the driver fails what it knows can never succeed.
 */
const setup = Effect.gen(function*() {
  const server = yield* startServer({}, (inner) => ({
    ...inner,
    exec: (id, request, onOutput) =>
      request.argv[0] === "stuck"
        ? Effect.fail(new DriverError({ message: "injected: the host cannot answer" }))
        : request.argv[0] === "impossible"
        ? Effect.fail(new DriverError({ message: "injected: never possible", permanent: "invalid_argument" }))
        : inner.exec(id, request, onOutput)
  }))
  const owner = yield* server.bootstrap("owner@example.com")
  const svc = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
  // The server fills in every other field's default.
  const created = yield* svc.machines.create({ payload: { name: "box", size: "small", internet_access: false } })
  const status = (operationId: string) => Effect.map(svc.operations.get({ path: { id: operationId } }), (op) => op)
  const until = (operationId: string, done: (status: string) => boolean) =>
    eventually(Effect.orDie(Effect.map(status(operationId), (op) => done(op.status) ? op : undefined)))
  yield* until(created.operation_id, (s) => s === "succeeded")
  const exec = (command: ReadonlyArray<string>) =>
    svc.machines.exec({
      path: { id: created.machine_id },
      headers: {},
      payload: { command: [command[0]!, ...command.slice(1)], timeout_seconds: 60 }
    })
  return { svc, machineId: created.machine_id, exec, until }
})

describe("no operation holds a mailbox", () => {
  it.scopedLive("a cancel ends an uncertain operation as correlation_miss; the next operation then runs", () =>
    Effect.gen(function*() {
      const { exec, svc, until } = yield* setup
      const stuck = yield* exec(["stuck"])
      const behind = yield* exec(["true"])
      yield* until(stuck.operation_id, (s) => s === "uncertain")
      assert.strictEqual((yield* svc.operations.get({ path: { id: behind.operation_id } })).status, "pending")
      yield* svc.operations.cancel({ path: { id: stuck.operation_id } })
      const ended = yield* until(stuck.operation_id, (s) => s === "correlation_miss")
      assert.strictEqual(ended.error_code, "cancelled")
      const next = yield* until(behind.operation_id, (s) => s === "succeeded")
      assert.strictEqual(next.exec_result?.exit_code, 0)
    }))

  it.scopedLive("a failure the driver knows is permanent fails the operation at once; the next one runs", () =>
    Effect.gen(function*() {
      const { exec, until } = yield* setup
      const impossible = yield* exec(["impossible"])
      const behind = yield* exec(["true"])
      const failed = yield* until(impossible.operation_id, (s) => s !== "pending" && s !== "running")
      assert.strictEqual(failed.status, "failed")
      assert.strictEqual(failed.error_code, "invalid_argument")
      assert.strictEqual(failed.attempt_count, 1)
      assert.strictEqual((yield* until(behind.operation_id, (s) => s === "succeeded")).exec_result?.exit_code, 0)
    }))

  it.scopedLive("a machine of an image no host has fails image_not_found at once instead of being retried", () =>
    Effect.gen(function*() {
      const { svc, until } = yield* setup
      const made = yield* svc.machines.create({ payload: { name: "no-image", image: "nope" } })
      const failed = yield* until(made.operation_id, (s) => s !== "pending" && s !== "running")
      assert.strictEqual(failed.status, "failed")
      assert.strictEqual(failed.error_code, "image_not_found")
      assert.strictEqual((yield* svc.machines.get({ path: { id: made.machine_id } })).state, "failed")
    }))

  it.scopedLive("a forced stop cancels what waits before it and stops the machine; a delete does the same", () =>
    Effect.gen(function*() {
      const { exec, machineId, svc, until } = yield* setup
      const stuck = yield* exec(["stuck"])
      const queued = yield* exec(["true"])
      yield* until(stuck.operation_id, (s) => s === "uncertain")
      const stop = yield* svc.machines.stop({ path: { id: machineId }, headers: {}, payload: { force: true } })
      assert.strictEqual((yield* until(stop.operation_id, (s) => s === "succeeded")).kind, "stop")
      assert.strictEqual((yield* until(stuck.operation_id, (s) => s !== "uncertain")).status, "correlation_miss")
      const skipped = yield* until(queued.operation_id, (s) => s === "failed")
      assert.strictEqual(skipped.error_code, "cancelled")
      assert.strictEqual((yield* svc.machines.get({ path: { id: machineId } })).state, "stopped")

      yield* svc.machines.start({ path: { id: machineId }, headers: {} })
      const again = yield* exec(["stuck"])
      yield* until(again.operation_id, (s) => s === "uncertain")
      const deleted = yield* svc.machines.delete({ path: { id: machineId }, headers: {} })
      yield* until(deleted.operation_id, (s) => s === "succeeded")
      assert.strictEqual((yield* svc.operations.get({ path: { id: again.operation_id } })).error_code, "cancelled")
      assert.strictEqual((yield* svc.machines.get({ path: { id: machineId } })).state, "deleted")
    }))
})
