/**
 * Machine ports end to end (extensions.md §5): exposing and unexposing as operations, the list on
 * the machine. The real server on a loopback port, real sandboxes, real SQLite; live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, TestClock } from "effect"
import { PortTokens } from "../../src/ports/PortTokens.js"
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

describe("port tokens", () => {
  it.scopedLive("a token is made for an exposed port of the caller's machine only", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup
      const id = yield* runningMachine(api, "tokens", { start: false })
      const path = `/v1/machines/${id}/ports/8080/tokens`
      const notExposed = yield* api("POST", path, { json: { expires_in_seconds: 600 } })
      assert.strictEqual(notExposed.status, 404)
      assert.strictEqual(notExposed.body.code, "resource_not_found")

      yield* change(api, "POST", `/v1/machines/${id}/ports`, { port: 8080 })
      const asked = Date.now()
      const made = yield* api("POST", path, { json: { expires_in_seconds: 600 } })
      const answered = Date.now()
      assert.strictEqual(made.status, 201)
      assert.match(made.body.token, /^[A-Za-z0-9_-]{43}$/)
      assert.strictEqual(made.body.url, `${server.url}/v1/machines/${id}/ports/8080/http/`)
      // 600 s from a moment between the request and its answer (however slow the host), to the second.
      const expires = Date.parse(made.body.expires_at)
      assert.isTrue(
        expires >= asked + 599_000 && expires <= answered + 600_000,
        `expires ${expires - asked} ms after the request`
      )
      const second = yield* api("POST", path, { json: { expires_in_seconds: 600 } })
      assert.notStrictEqual(second.body.token, made.body.token)

      for (const expires_in_seconds of [59, 86401, 1.5]) {
        assert.strictEqual((yield* api("POST", path, { json: { expires_in_seconds } })).status, 422)
      }
      assert.strictEqual((yield* api("POST", path, { json: {} })).status, 422)
      const other = yield* api("POST", `/v1/machines/${id}/ports/8081/tokens`, { json: { expires_in_seconds: 60 } })
      assert.strictEqual(other.status, 404)

      const stranger = client(server.url, { key: (yield* server.bootstrap("stranger@example.com")).api_key })
      assert.strictEqual((yield* stranger("POST", path, { json: { expires_in_seconds: 600 } })).status, 404)

      yield* change(api, "DELETE", `/v1/machines/${id}/ports/8080`)
      assert.strictEqual((yield* api("POST", path, { json: { expires_in_seconds: 600 } })).status, 404)
    }))

  it.scoped("a token opens its machine's port until it expires, in the proxy too (TestClock)", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup
      const tokens = Context.get(server.context, PortTokens)
      const id = yield* runningMachine(api, "expiring", { start: false })
      const otherId = yield* runningMachine(api, "neighbour", { start: false })
      yield* change(api, "POST", `/v1/machines/${id}/ports`, { port: 8080 })
      yield* change(api, "POST", `/v1/machines/${id}/ports`, { port: 9090 })
      const now = yield* Clock.currentTimeMillis
      const made = yield* api("POST", `/v1/machines/${id}/ports/8080/tokens`, { json: { expires_in_seconds: 60 } })
      assert.strictEqual(made.status, 201)
      assert.strictEqual(made.body.expires_at, new Date(now + 60_000).toISOString())
      const token: string = made.body.token

      // Through the proxy: the token passes (then the stopped machine answers 502), until it expires (404).
      const proxied = client(server.url, { headers: { "x-svc-port-token": token } })
      const proxyPath = `/v1/machines/${id}/ports/8080/http/`
      assert.strictEqual((yield* proxied("GET", proxyPath)).status, 502)
      assert.isTrue(yield* tokens.opens(token, id, 8080))
      assert.isFalse(yield* tokens.opens(token, id, 9090), "another port of the same machine")
      assert.isFalse(yield* tokens.opens(token, otherId, 8080), "the same port of another machine")
      assert.isFalse(yield* tokens.opens(`${token}x`, id, 8080))
      yield* TestClock.adjust("59 seconds")
      assert.isTrue(yield* tokens.opens(token, id, 8080))
      yield* TestClock.adjust("1 second")
      assert.isFalse(yield* tokens.opens(token, id, 8080), "expired")
      assert.strictEqual((yield* proxied("GET", proxyPath)).status, 404)
    }))
})
