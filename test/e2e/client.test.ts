/** The typed client exported for embedding, against the real server: values and typed errors. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeClient } from "../../src/index.js"
import { startServer } from "../support/TestServer.js"

describe("typed client", () => {
  it.scoped("reads and changes through the same API definition the server implements", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* server.bootstrap("client@example.com")
      const svc = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
      const me = yield* svc.members.me()
      assert.strictEqual(me.user.email, "client@example.com")
      const created = yield* svc.apiKeys.create({ payload: { name: "ci", preset: "read_only", expires_in_days: 7 } })
      assert.strictEqual(created.api_key.preset, "read_only")
      const listed = yield* svc.apiKeys.list()
      assert.includeMembers(listed.items.map((key) => key.id), [created.api_key.id])
    }))

  it.scoped("problem answers decode into their error classes", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const anonymous = yield* makeClient({ baseUrl: server.url })
      const unauthenticated = yield* Effect.flip(anonymous.members.me())
      assert.strictEqual(unauthenticated._tag, "unauthenticated")
      const badKey = yield* makeClient({ baseUrl: server.url, apiKey: "svc_aaaaaaaa_" + "b".repeat(40) })
      const invalid = yield* Effect.flip(badKey.members.me())
      assert.strictEqual(invalid._tag, "invalid_api_key")
    }))
})

describe("typed client: wire-form requests and waiting", () => {
  it.scopedLive("creates a machine and runs a command without the fields the server defaults", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* server.bootstrap("wire@example.com")
      const svc = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
      const accepted = yield* svc.machines.create({ payload: { name: "wire" } })
      const created = yield* svc.waitOperation(accepted)
      assert.strictEqual(created.status, "succeeded")
      const machine = yield* svc.machines.get({ path: { id: accepted.machine_id } })
      // The server's defaults, not the client's: size, image and internet access as the server decides.
      assert.strictEqual(machine.size, "default")
      assert.strictEqual(machine.internet_access, true)
      const exec = yield* svc.machines.exec({ path: { id: accepted.machine_id }, payload: { command: ["echo", "hi"] } })
      const done = yield* svc.waitOperation(exec.operation_id)
      assert.strictEqual(done.exec_result?.exit_code, 0)
      assert.strictEqual(Buffer.from(done.exec_result!.stdout_base64, "base64").toString(), "hi\n")
      // Query strings in their wire form, the defaulted limit left out; a stop with no body.
      const listed = yield* svc.machines.list()
      assert.deepStrictEqual(listed.items.map((m) => m.id), [accepted.machine_id])
      const page = yield* svc.operations.listForMachine({
        path: { id: accepted.machine_id },
        urlParams: { limit: "1" }
      })
      assert.strictEqual(page.items.length, 1)
      const stopped = yield* svc.waitOperation(yield* svc.machines.stop({ path: { id: accepted.machine_id } }))
      assert.strictEqual(stopped.status, "succeeded")
    }))

  it.scoped("a mutation carries an idempotency key: the same call with the caller's key is answered once", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* server.bootstrap("keys@example.com")
      const svc = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
      const first = yield* svc.machines.create({ payload: { name: "once" }, headers: { "idempotency-key": "k-1" } })
      const again = yield* svc.machines.create({ payload: { name: "once" }, headers: { "idempotency-key": "k-1" } })
      assert.strictEqual(again.operation_id, first.operation_id)
    }))
})
