/**
 * Operation event streams end to end (GET /v1/operations/{id}/events): the real server on a
 * loopback port, real SQLite, process machines (what is streamed does not depend on the driver).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { DomainEvents } from "../../src/events/DomainEvents.js"
import { client } from "../support/Http.js"
import { decode, eventually, readEvents, runningMachine, settled, sh } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const setup = Effect.gen(function*() {
  const server = yield* startServer()
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
