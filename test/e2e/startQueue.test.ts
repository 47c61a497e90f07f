/**
 * The host's start queue (src/runtime/HostCapacity.ts): a boot that finds the host full stays
 * `pending` with `starting_soon`, is admitted when a machine stops, and fails `no_capacity` when it
 * has waited too long. Real sandboxes on a host capped at one running machine; expiry on TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { client } from "../support/Http.js"
import { change, eventually, reached, realSleep, runningMachine, settled } from "../support/Machines.js"
import { smallHost } from "../support/TestServer.js"

const setup = (maxRunning: number) => Effect.map(smallHost(maxRunning), ({ api }) => api)

type Api = ReturnType<typeof client>

const queued = (api: Api, operationId: string) =>
  eventually(Effect.map(
    api("GET", `/v1/operations/${operationId}`),
    (reply) => reply.body.starting_soon === null ? undefined : reply.body
  ))

describe("start queue", () => {
  it.scoped("a boot on a full host waits with starting_soon and runs once a machine stops", () =>
    Effect.gen(function*() {
      const api = yield* setup(1)
      const first = yield* runningMachine(api, "first")
      const second = yield* api("POST", "/v1/machines", { json: { name: "second", start: true } })
      assert.strictEqual(second.status, 202)
      const third = yield* api("POST", "/v1/machines", { json: { name: "third", start: true } })

      const waiting = yield* queued(api, second.body.operation_id)
      assert.strictEqual(waiting.status, "pending")
      assert.deepStrictEqual(
        { ...waiting.starting_soon, queued_at: undefined, expires_at: undefined },
        {
          operation_id: second.body.operation_id,
          position: 1,
          priority: "paid",
          reason: "host_at_capacity",
          queued_at: undefined,
          expires_at: undefined
        }
      )
      assert.strictEqual(
        Date.parse(waiting.starting_soon.expires_at) - Date.parse(waiting.starting_soon.queued_at),
        120_000
      )
      const behind = yield* queued(api, third.body.operation_id)
      assert.strictEqual(behind.starting_soon.position, 2)

      // The first machine stops: the second boots, the third moves up and still waits.
      yield* change(api, "POST", `/v1/machines/${first}/stop`, {})
      const booted = yield* settled(api, second.body.operation_id)
      assert.strictEqual(booted.status, "succeeded")
      assert.strictEqual(booted.starting_soon, null)
      assert.strictEqual((yield* api("GET", `/v1/machines/${second.body.machine_id}`)).body.state, "running")
      const moved = yield* eventually(Effect.map(
        api("GET", `/v1/operations/${third.body.operation_id}`),
        (reply) => reply.body.starting_soon?.position === 1 ? reply.body : undefined
      ))
      assert.strictEqual(moved.status, "pending")
      assert.strictEqual((yield* api("GET", `/v1/machines/${third.body.machine_id}`)).body.state, "creating")
    }))

  it.scoped("a boot that waits past the queue's time fails with no_capacity; a cancelled one leaves the queue", () =>
    Effect.gen(function*() {
      const api = yield* setup(1)
      const first = yield* runningMachine(api, "first")
      const late = yield* api("POST", "/v1/machines", { json: { name: "late", start: true } })
      const cancelled = yield* api("POST", "/v1/machines", { json: { name: "gone", start: true } })
      yield* queued(api, cancelled.body.operation_id)

      const cancel = yield* api("POST", `/v1/operations/${cancelled.body.operation_id}/cancel`)
      assert.strictEqual(cancel.body.status, "failed")
      assert.strictEqual(cancel.body.error_code, "cancelled")
      assert.strictEqual(
        (yield* queued(api, late.body.operation_id)).starting_soon.position,
        1
      )

      yield* TestClock.adjust("119 seconds")
      yield* realSleep(150)
      assert.strictEqual((yield* api("GET", `/v1/operations/${late.body.operation_id}`)).body.status, "pending")
      yield* TestClock.adjust("2 seconds")
      const expired = yield* settled(api, late.body.operation_id)
      assert.strictEqual(expired.status, "failed")
      assert.strictEqual(expired.error_code, "no_capacity")
      assert.strictEqual(expired.starting_soon, null)
      // The machine was created without booting: stopped, with its disk, and it starts once there is room.
      assert.strictEqual((yield* api("GET", `/v1/machines/${late.body.machine_id}`)).body.state, "stopped")
      yield* change(api, "POST", `/v1/machines/${first}/stop`, {})
      const started = yield* change(api, "POST", `/v1/machines/${late.body.machine_id}/start`, {})
      assert.strictEqual(started.status, "succeeded")
    }))

  it.scoped("a start accepted while an earlier boot was to run the machine still waits its turn if that boot did not happen", () =>
    Effect.gen(function*() {
      const api = yield* setup(1)
      const first = yield* runningMachine(api, "first")
      const created = yield* change(api, "POST", "/v1/machines", { name: "second", start: false })
      const second = created.machine_id as string
      // The first start waits for the host; the second is accepted while the machine is to be running
      // anyway (so it costs no start), then the first leaves the queue and the machine stays stopped.
      const waiting = yield* api("POST", `/v1/machines/${second}/start`, { json: {} })
      yield* queued(api, waiting.body.operation_id)
      const again = yield* api("POST", `/v1/machines/${second}/start`, { json: {} })
      assert.strictEqual(again.status, 202)
      yield* api("POST", `/v1/operations/${waiting.body.operation_id}/cancel`)

      // The second start boots a stopped machine, so it waits for the host like any boot.
      const behind = yield* queued(api, again.body.operation_id)
      assert.strictEqual(behind.status, "pending")
      assert.strictEqual(behind.starting_soon.position, 1)
      yield* realSleep(300)
      assert.strictEqual((yield* api("GET", `/v1/machines/${second}`)).body.state, "stopped")
      const running = yield* api("GET", "/v1/machines")
      assert.deepStrictEqual(
        running.body.items.filter((m: { state: string }) => m.state === "running").map((m: { id: string }) => m.id),
        [first]
      )

      yield* change(api, "POST", `/v1/machines/${first}/stop`, {})
      assert.strictEqual((yield* settled(api, again.body.operation_id)).status, "succeeded")
      assert.strictEqual((yield* api("GET", `/v1/machines/${second}`)).body.state, "running")
    }))

  it.scoped("a start accepted while its machine ran waits for the host if the machine's sandbox ended meanwhile", () =>
    Effect.gen(function*() {
      const { api, server } = yield* smallHost(1)
      const crashy = yield* runningMachine(api, "crashy")
      const other = yield* api("POST", "/v1/machines", { json: { name: "other", start: true } })
      yield* queued(api, other.body.operation_id)
      // A start accepted behind a running exec: the machine is to be running anyway, so it costs no start.
      const exec = yield* api("POST", `/v1/machines/${crashy}/exec`, { json: { shell: "sleep 30" } })
      yield* reached(api, exec.body.operation_id, "running")
      const start = yield* api("POST", `/v1/machines/${crashy}/start`, { json: {} })
      assert.strictEqual(start.status, 202)
      const run = JSON.parse(
        NodeFs.readFileSync(NodePath.join(server.config.dataDir, "machines", crashy, "run.json"), "utf8")
      )
      process.kill(run.pid, "SIGKILL") // the sandbox's pid 1: the machine ends on its own
      // The exec finds it gone and the machine is stopped, which hands the slot to the waiting machine.
      assert.strictEqual((yield* settled(api, exec.body.operation_id)).error_code, "machine_not_running")
      assert.strictEqual((yield* settled(api, other.body.operation_id)).status, "succeeded")

      // The start boots a stopped machine on a full host: it waits instead of making two run.
      const waiting = yield* queued(api, start.body.operation_id)
      assert.strictEqual(waiting.status, "pending")
      const listed = (yield* api("GET", "/v1/machines")).body.items
      assert.deepStrictEqual(
        listed.filter((m: { state: string }) => m.state === "running").map((m: { id: string }) => m.id),
        [other.body.machine_id]
      )
      yield* change(api, "POST", `/v1/machines/${other.body.machine_id}/stop`, {})
      assert.strictEqual((yield* settled(api, start.body.operation_id)).status, "succeeded")
      assert.strictEqual((yield* api("GET", `/v1/machines/${crashy}`)).body.state, "running")
    }))

  it.scoped("a create cancelled in the queue leaves a machine not created: exec and agent prompts answer one 409", () =>
    Effect.gen(function*() {
      const api = yield* setup(1)
      yield* runningMachine(api, "first")
      const created = yield* api("POST", "/v1/machines", { json: { name: "never", start: true } })
      yield* queued(api, created.body.operation_id)
      yield* api("POST", `/v1/operations/${created.body.operation_id}/cancel`)
      const id = created.body.machine_id
      assert.strictEqual((yield* api("GET", `/v1/machines/${id}`)).body.state, "creating")
      // Machines and agents answer by the one rule (src/kernel/domain/MachineStates.ts conflictOf).
      const exec = yield* api("POST", `/v1/machines/${id}/exec`, { json: { shell: "true" } })
      const prompt = yield* api("POST", `/v1/machines/${id}/agents/prompt`, {
        json: { provider: "claude_code", text: "hi" }
      })
      assert.deepStrictEqual([exec.status, exec.body.code], [409, "machine_not_created"])
      assert.deepStrictEqual([prompt.status, prompt.body.code], [409, "machine_not_created"])
    }))

  it.scoped("a machine that already runs takes no new slot: restart on a full host goes ahead", () =>
    Effect.gen(function*() {
      const api = yield* setup(1)
      const id = yield* runningMachine(api, "only")
      const restarted = yield* change(api, "POST", `/v1/machines/${id}/restart`, {})
      assert.strictEqual(restarted.status, "succeeded")
    }))
})
