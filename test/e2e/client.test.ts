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
