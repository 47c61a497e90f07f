/**
 * Operation event streams end to end (GET /v1/operations/{id}/events): the real server on a
 * loopback port, real SQLite, process machines (what is streamed does not depend on the driver).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Queue } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { DomainEvents } from "../../src/kernel/events/DomainEvents.js"
import { type Flush, FlushHook } from "../../src/kernel/sql/Sqlite.js"
import { client } from "../support/Http.js"
import { decode, eventually, readEvents, runningMachine, settled, sh } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const setup = Effect.gen(function*() {
  const server = yield* startServer()
  return yield* withServer(server)
})

const withServer = (server: Effect.Effect.Success<ReturnType<typeof startServer>>) =>
  Effect.gen(function*() {
    const owner = yield* server.bootstrap("owner@example.com")
    return {
      server,
      api: client(server.url, { key: owner.api_key }),
      events: (operationId: string, headers: Record<string, string> = {}) =>
        readEvents(`${server.url}/v1/operations/${operationId}/events`, {
          authorization: `Bearer ${owner.api_key}`,
          ...headers
        })
    }
  })

describe("operation events", () => {
  it.scopedLive("readers of many operations at once each get their own events only", () =>
    Effect.gen(function*() {
      const { api, events, server } = yield* setup
      const machines = yield* Effect.all([runningMachine(api, "one"), runningMachine(api, "two")])
      // Three execs queued on each machine: most readers start while their operation still waits.
      const accepted = yield* Effect.forEach([0, 1, 2, 3, 4, 5], (i) =>
        Effect.map(
          api("POST", `/v1/machines/${machines[i % 2]}/exec`, {
            json: { shell: `echo start-${i}; sleep 0.2; echo done-${i}` }
          }),
          (reply) => reply.body.operation_id as string
        ))
      const read = yield* Effect.forEach(accepted, (id) => events(id), { concurrency: "unbounded" })
      read.forEach((stream, i) => {
        const output = stream.events.filter((e) => e.event === "output").map((e) => decode(e.data.data_base64))
        assert.strictEqual(output.join(""), `start-${i}\ndone-${i}\n`)
        assert.deepStrictEqual(stream.events.filter((e) => e.event === "status").map((e) => e.data.status), [
          "pending",
          "running",
          "succeeded"
        ])
        assert.strictEqual(stream.events[stream.events.length - 1]!.event, "end")
        const ids = stream.events.map((e) => Number(e.id))
        assert.deepStrictEqual(ids, [...ids].sort((a, b) => a - b))
      })
      const bus = Context.get(server.context, DomainEvents)
      yield* eventually(Effect.sync(() => accepted.every((id) => bus.watchingOperation(id) === 0) || undefined))
    }))

  it.scopedLive("a reader that goes away stops watching its operation", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup
      const owner = yield* server.bootstrap("owner@example.com")
      const machine = yield* runningMachine(api, "away")
      const accepted = yield* api("POST", `/v1/machines/${machine}/exec`, {
        json: { shell: "echo started; sleep 600" }
      })
      const id = accepted.body.operation_id as string
      const bus = Context.get(server.context, DomainEvents)
      const controller = new AbortController()
      const first = yield* Effect.promise(async () => {
        const response = await fetch(`${server.url}/v1/operations/${id}/events`, {
          headers: { authorization: `Bearer ${owner.api_key}` },
          signal: controller.signal
        })
        return Buffer.from((await response.body!.getReader().read()).value!).toString("utf8")
      })
      assert.include(first, "event: status")
      assert.strictEqual(bus.watchingOperation(id), 1)
      controller.abort()
      yield* eventually(Effect.sync(() => bus.watchingOperation(id) === 0 || undefined))
      yield* api("POST", `/v1/operations/${id}/cancel`)
    }))

  it.scopedLive("the stream ends once the settle is committed, during its flush; the bus gets it after the flush", () =>
    Effect.gen(function*() {
      // The database log's flushes are held back while `holding`, and let go by hand.
      let holding = false
      const held: Array<() => void> = []
      const hold = (flush: Flush): Flush => (done) => holding ? void held.push(() => flush(done)) : flush(done)
      const release = Effect.sync(() => {
        holding = false
        for (const flush of held.splice(0)) flush()
      })
      const server = yield* Effect.provideService(startServer(), FlushHook, hold)
      // Before the server closes, also when an assertion failed.
      yield* Effect.addFinalizer(() => release)
      const { api, events } = yield* withServer(server)
      const machine = yield* runningMachine(api, "flush")
      // The command waits for a file the test writes into the machine's disk from the host.
      const gate = NodePath.join(server.config.dataDir, "machines", machine, "disk", "workspace", "go")
      const accepted = yield* api("POST", `/v1/machines/${machine}/exec`, {
        json: { shell: "while [ ! -e /workspace/go ]; do sleep 0.01; done; echo done" }
      })
      const id = accepted.body.operation_id as string
      const bus = Context.get(server.context, DomainEvents)
      const settles = yield* bus.subscribe((event) => event._tag === "OperationSettled" && event.operationId === id)
      holding = true
      NodeFs.writeFileSync(gate, "")
      const read = yield* events(id).pipe(Effect.disconnect, Effect.timeout("10 seconds"))
      assert.deepStrictEqual(read.events.slice(-2).map((e) => [e.event, e.data.status]), [
        ["status", "succeeded"],
        ["end", "succeeded"]
      ])
      // The settle's flush is still held, and no subscriber has heard of it.
      assert.isAbove(held.length, 0)
      assert.strictEqual(yield* Queue.size(settles), 0)
      yield* release
      const settle = yield* Queue.take(settles).pipe(Effect.timeout("10 seconds"))
      assert.strictEqual(settle._tag === "OperationSettled" && settle.type, "operation.succeeded")
    }))

  it.scopedLive("a reader of an ended operation gets its history and end in one body; after end, nothing", () =>
    Effect.gen(function*() {
      const { api, events } = yield* setup
      const machine = yield* runningMachine(api, "ended")
      const accepted = yield* api("POST", `/v1/machines/${machine}/exec`, { json: { shell: "echo hi" } })
      yield* settled(api, accepted.body.operation_id)
      const all = yield* events(accepted.body.operation_id)
      assert.strictEqual(all.status, 200)
      assert.match(all.contentType ?? "", /text\/event-stream/)
      assert.deepStrictEqual(all.events.map((e) => e.event), ["status", "status", "output", "status", "end"])
      assert.strictEqual(decode(all.events[2]!.data.data_base64), "hi\n")
      const end = all.events[4]!.id!
      const afterEnd = yield* events(accepted.body.operation_id, { "last-event-id": end })
      assert.deepStrictEqual([afterEnd.status, afterEnd.events], [200, []])
      // A later operation's events do not reach this one's readers.
      yield* sh(api, machine, "echo later")
      const again = yield* events(accepted.body.operation_id)
      assert.deepStrictEqual(again.events, all.events)
    }))
})
