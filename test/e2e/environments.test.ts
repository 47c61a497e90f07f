/** Environments end to end: sealed at rest, never returned, versioned, upgraded by operations. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import { client } from "../support/Http.js"
import { change, decode, runningMachine, settled, sh } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

describe("environments", () => {
  it.scopedLive("values are sealed and write-only; machines boot with their version until upgraded", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ runtime: "sandbox", secretKeys })
      const owner = yield* server.bootstrap("env@example.com")
      const api = client(server.url, { key: owner.api_key })
      const created = yield* api("POST", "/v1/environments", {
        json: { name: "prod", variables: { GREETING: "hi-there-secret", EXTRA: "x" } }
      })
      assert.strictEqual(created.status, 201)
      assert.deepStrictEqual(created.body.variable_names, ["EXTRA", "GREETING"])
      assert.strictEqual(created.body.version, 1)
      assert.notInclude(created.text, "hi-there-secret")
      const env = created.body.id
      assert.notInclude((yield* api("GET", `/v1/environments/${env}`)).text, "hi-there-secret")
      assert.notInclude(NodeFs.readFileSync(server.config.databaseFile).toString("latin1"), "hi-there-secret")

      const id = yield* runningMachine(api, "with-env", { environment_id: env })
      const machine = (yield* api("GET", `/v1/machines/${id}`)).body
      assert.strictEqual(machine.environment_version, 1)
      const greet = () => Effect.map(sh(api, id, "echo $GREETING"), (op) => decode(op.exec_result.stdout_base64))
      assert.strictEqual(yield* greet(), "hi-there-secret\n")

      const patched = yield* api("PATCH", `/v1/environments/${env}`, {
        json: { variables: { GREETING: "hello-v2", EXTRA: null } }
      })
      assert.strictEqual(patched.body.version, 2)
      assert.deepStrictEqual(patched.body.variable_names, ["GREETING"])
      yield* change(api, "POST", `/v1/machines/${id}/restart`)
      assert.strictEqual(yield* greet(), "hi-there-secret\n", "still on version 1 until upgraded")

      const upgrade = yield* api("POST", `/v1/environments/${env}/upgrade`)
      assert.strictEqual(upgrade.status, 202)
      assert.strictEqual(upgrade.body.operations.length, 1)
      assert.strictEqual(upgrade.body.operations[0].requested_action, "apply_environment")
      const again = yield* api("POST", `/v1/environments/${env}/upgrade`)
      assert.strictEqual(again.body.operations[0]?.operation_id, upgrade.body.operations[0].operation_id)
      assert.strictEqual((yield* settled(api, upgrade.body.operations[0].operation_id)).status, "succeeded")
      assert.strictEqual((yield* api("GET", `/v1/machines/${id}`)).body.environment_version, 2)
      assert.strictEqual(yield* greet(), "hi-there-secret\n", "running processes get it from the next start")
      yield* change(api, "POST", `/v1/machines/${id}/restart`)
      assert.strictEqual(yield* greet(), "hello-v2\n")

      const inUse = yield* api("DELETE", `/v1/environments/${env}`)
      assert.strictEqual(inUse.status, 409)
      assert.strictEqual(inUse.body.code, "environment_in_use")
      yield* change(api, "DELETE", `/v1/machines/${id}`)
      assert.strictEqual((yield* api("DELETE", `/v1/environments/${env}`)).status, 204)
      assert.strictEqual((yield* api("GET", `/v1/environments/${env}`)).status, 404)
      const missing = yield* api("POST", "/v1/machines", { json: { name: "orphan", environment_id: env } })
      assert.strictEqual(missing.status, 404)
    }))

  it.scopedLive("with SVC_SECRET_KEYS=none nothing can be stored: 503 secrets_unavailable", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ secretKeys: { kind: "none" } })
      const owner = yield* server.bootstrap("none@example.com")
      const reply = yield* client(server.url, { key: owner.api_key })("POST", "/v1/environments", {
        json: { name: "x", variables: { A: "1" } }
      })
      assert.strictEqual(reply.status, 503)
      assert.strictEqual(reply.body.code, "secrets_unavailable")
    }))
})
