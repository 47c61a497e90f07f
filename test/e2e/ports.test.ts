/**
 * Machine ports end to end (extensions.md §5): exposing and unexposing as operations, the list on
 * the machine. The real server on a loopback port, real sandboxes, real SQLite; live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { client } from "../support/Http.js"
import { change, runningMachine } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const setup = Effect.gen(function*() {
  const server = yield* startServer({ runtime: "sandbox" })
  const owner = yield* server.bootstrap("owner@example.com")
  return { server, owner, api: client(server.url, { key: owner.api_key }) }
})

describe("machine ports", () => {
  it.scopedLive("expose and unexpose are operations; repeating one is completed but unchanged", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup
      const id = yield* runningMachine(api, "ports")
      const accepted = yield* api("POST", `/v1/machines/${id}/ports`, { json: { port: 8080 } })
      assert.strictEqual(accepted.status, 202)
      assert.strictEqual(accepted.body.requested_action, "expose_port")

      const exposed = yield* change(api, "POST", `/v1/machines/${id}/ports`, { port: 8080 })
      assert.strictEqual(exposed.kind, "expose_port")
      assert.strictEqual(exposed.status, "succeeded")
      assert.isTrue(exposed.completed_but_unchanged, "the same port with the same visibility again")

      const other = yield* change(api, "POST", `/v1/machines/${id}/ports`, { port: 3000, public: true })
      assert.isFalse(other.completed_but_unchanged)
      const machine = (yield* api("GET", `/v1/machines/${id}`)).body
      assert.deepStrictEqual(machine.ports, [
        { port: 3000, public: true, url: `${server.url}/v1/machines/${id}/ports/3000/http/` },
        { port: 8080, public: false, url: `${server.url}/v1/machines/${id}/ports/8080/http/` }
      ])

      const made = yield* change(api, "POST", `/v1/machines/${id}/ports`, { port: 8080, public: true })
      assert.isFalse(made.completed_but_unchanged, "a new visibility is a change")
      const listed = (yield* api("GET", "/v1/machines")).body.items[0]
      assert.deepStrictEqual(listed.ports.map((p: any) => [p.port, p.public]), [[3000, true], [8080, true]])

      const removedAccepted = yield* api("DELETE", `/v1/machines/${id}/ports/3000`)
      assert.strictEqual(removedAccepted.status, 202)
      assert.strictEqual(removedAccepted.body.requested_action, "unexpose_port")
      const removed = yield* change(api, "DELETE", `/v1/machines/${id}/ports/3000`)
      assert.strictEqual(removed.kind, "unexpose_port")
      assert.isTrue(removed.completed_but_unchanged, "the first delete removed it already")
      const never = yield* change(api, "DELETE", `/v1/machines/${id}/ports/4000`)
      assert.strictEqual(never.status, "succeeded")
      assert.isTrue(never.completed_but_unchanged)
      assert.deepStrictEqual((yield* api("GET", `/v1/machines/${id}`)).body.ports.map((p: any) => p.port), [8080])
    }))

  it.scopedLive("ports can change on a stopped machine, not a deleted one; bad ports are 422", () =>
    Effect.gen(function*() {
      const { api } = yield* setup
      const id = yield* runningMachine(api, "stopped-ports", { start: false })
      const exposed = yield* change(api, "POST", `/v1/machines/${id}/ports`, { port: 5000 })
      assert.strictEqual(exposed.status, "succeeded")
      const machine = (yield* api("GET", `/v1/machines/${id}`)).body
      assert.strictEqual(machine.state, "stopped")
      assert.deepStrictEqual(machine.ports.map((p: any) => [p.port, p.public]), [[5000, false]])

      for (const port of [0, 65536, 1.5, "80"]) {
        const bad = yield* api("POST", `/v1/machines/${id}/ports`, { json: { port } })
        assert.strictEqual(bad.status, 422, `port ${port}`)
      }
      assert.strictEqual((yield* api("DELETE", `/v1/machines/${id}/ports/0`)).status, 422)
      assert.strictEqual((yield* api("DELETE", `/v1/machines/${id}/ports/http`)).status, 422)

      yield* change(api, "DELETE", `/v1/machines/${id}`)
      const gone = yield* api("POST", `/v1/machines/${id}/ports`, { json: { port: 5000 } })
      assert.strictEqual(gone.status, 409)
      assert.strictEqual(gone.body.code, "machine_deleted")
    }))

  it.scopedLive("ports need U and a machine of the caller's organization", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup
      const id = yield* runningMachine(api, "guarded", { start: false })
      const stranger = yield* server.bootstrap("stranger@example.com")
      const other = client(server.url, { key: stranger.api_key })
      assert.strictEqual((yield* other("POST", `/v1/machines/${id}/ports`, { json: { port: 80 } })).status, 404)
      assert.strictEqual((yield* other("DELETE", `/v1/machines/${id}/ports/80`)).status, 404)
      assert.strictEqual((yield* api("POST", `/v1/machines/${id}/ports`, { json: { port: 80 } })).status, 202)
    }))
})
