/**
 * `GET /v1/operator/hosts` (docs/operators.md): the operator token lists the hosts with their
 * lease's state and running machines; a member's key, even a full_access owner's, is refused. And
 * `POST /v1/machines` with `host` over HTTP: a malformed or unknown host is a 422 on `host`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { client } from "../support/Http.js"
import { startServer } from "../support/TestServer.js"

describe("operator hosts", () => {
  it.scoped("the operator token lists the hosts; a member's key is refused", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ hostId: "node-a", operatorToken: Option.some(Redacted.make("op-secret")) })
      const alice = yield* server.bootstrap("alice@example.com")
      const member = client(server.url, { key: alice.api_key })
      const operator = client(server.url, { headers: { "x-svc-operator-token": "op-secret" } })

      const made = yield* member("POST", "/v1/machines", { json: { name: "one", host: "node-a", start: false } })
      assert.strictEqual(made.status, 202, made.text)
      for (const host of ["Not A Host!", "nowhere"]) {
        const refused = yield* member("POST", "/v1/machines", { json: { name: "two", host } })
        assert.strictEqual(refused.status, 422, refused.text)
        assert.deepStrictEqual(
          (refused.body as { field_errors: Array<{ field: string }> }).field_errors.map((e) => e.field),
          [
            "host"
          ]
        )
      }

      // The attack: a member's key (and no key) on the operator route.
      for (const headers of [{ authorization: `Bearer ${alice.api_key}` }, {}]) {
        const refused = yield* client(server.url, { headers })("GET", "/v1/operator/hosts")
        assert.strictEqual(refused.status, 401, refused.text)
      }
      const wrong = yield* client(server.url, { headers: { "x-svc-operator-token": "op-secreT" } })(
        "GET",
        "/v1/operator/hosts"
      )
      assert.strictEqual(wrong.status, 401)

      const listed = yield* operator("GET", "/v1/operator/hosts")
      assert.strictEqual(listed.status, 200, listed.text)
      const items = (listed.body as { items: Array<Record<string, unknown>> }).items
      assert.deepStrictEqual(items.map((host) => [host.host_id, host.state, host.running_machines, host.capacity]), [
        ["node-a", "live", 0, null]
      ])
      assert.strictEqual(items[0]!.internal_url, server.config.baseUrl)
      assert.isString(items[0]!.version)
    }), 120_000)
})
