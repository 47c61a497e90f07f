/**
 * Every answer says what happened (issue 37 item 3), on a real loopback server: a conflict names
 * the state the machine is and will be in; a body that is not JSON is 415; a method a path does
 * not take is 405 with `Allow`; an unknown query parameter is refused like an unknown body member;
 * a refused value is quoted back only by a short prefix.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { client, request } from "../support/Http.js"
import { settled } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const setup = Effect.gen(function*() {
  const server = yield* startServer({ maxBodyBytes: 1024 * 1024 })
  const owner = yield* server.bootstrap("answers@example.com")
  return { server, api: client(server.url, { key: owner.api_key }) }
})

describe("answers that say what happened", () => {
  it.scopedLive("a conflict names the state the machine is in and the one it will be in", () =>
    Effect.gen(function*() {
      const { api } = yield* setup
      const created = yield* api("POST", "/v1/machines", { json: { name: "idle", start: false } })
      yield* settled(api, created.body.operation_id)
      const id = created.body.machine_id
      const exec = yield* api("POST", `/v1/machines/${id}/exec`, { json: { shell: "true" } })
      assert.strictEqual(exec.body.code, "machine_not_running")
      assert.strictEqual(exec.body.detail, "Exec needs a running machine; the machine is stopped. Start it first.")
      const deleted = yield* api("DELETE", `/v1/machines/${id}`)
      assert.strictEqual(deleted.status, 202, deleted.text)
      const afterDelete = yield* api("POST", `/v1/machines/${id}/start`)
      assert.strictEqual(afterDelete.body.code, "machine_deleted")
      assert.match(
        afterDelete.body.detail,
        /^The machine (is stopped and will be deleted|is being deleted|was deleted)/
      )
      assert.notInclude(afterDelete.body.detail, "will be stopped")
    }))

  it.scopedLive("a body that is not JSON answers 415 on a JSON route; an empty one is no body", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup
      for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
        const reply = yield* api("POST", "/v1/machines", {
          body: "{\"name\":\"typed\"}",
          headers: { "content-type": type }
        })
        assert.strictEqual(reply.status, 415, `${type}: ${reply.text}`)
        assert.strictEqual(reply.body.code, "unsupported_media_type")
        assert.include(reply.body.detail, "application/json")
      }
      const listed = yield* api("GET", "/v1/machines")
      assert.deepStrictEqual(listed.body.items, [], "nothing was made")
      const json = yield* api("POST", "/v1/machines", {
        body: "{\"name\":\"typed\",\"start\":false}",
        headers: { "content-type": "application/json; charset=utf-8" }
      })
      assert.strictEqual(json.status, 202, json.text)
      // OAuth clients send the device token poll form-encoded (RFC 8628): still read, and answered in its shape.
      const poll = yield* request(server.url, "POST", "/v1/auth/device/token", {
        body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=unknown",
        headers: { "content-type": "application/x-www-form-urlencoded" }
      })
      assert.strictEqual(poll.status, 400, poll.text)
      assert.strictEqual(poll.body.error, "invalid_grant")
    }))

  it.scopedLive("a method the path does not take answers 405 with Allow; an unknown path 404", () =>
    Effect.gen(function*() {
      const { api } = yield* setup
      const reply = yield* api("PUT", "/v1/machines")
      assert.strictEqual(reply.status, 405, reply.text)
      assert.strictEqual(reply.body.code, "method_not_allowed")
      assert.deepStrictEqual(reply.headers.get("allow")!.split(", ").sort(), ["GET", "POST"])
      assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
      assert.isString(reply.headers.get("x-correlation-id"))
      const one = yield* api("POST", "/v1/machines/0190d9a2-0000-7000-8000-000000000001")
      assert.strictEqual(one.status, 405)
      assert.deepStrictEqual(one.headers.get("allow")!.split(", ").sort(), ["DELETE", "GET", "PATCH"])
      assert.strictEqual((yield* api("GET", "/v1/nothing-here")).status, 404)
    }))

  it.scopedLive("an unknown query parameter is refused like an unknown body member", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup
      const typo = yield* api("GET", "/v1/machines?limt=5")
      assert.strictEqual(typo.status, 422, typo.text)
      assert.strictEqual(typo.body.field_errors[0].field, "limt")
      assert.include(typo.body.field_errors[0].message, "unknown query parameter")
      assert.include(typo.body.field_errors[0].message, "\"limit\"")
      const none = yield* api("GET", "/v1/limits?verbose=1")
      assert.strictEqual(none.status, 422)
      assert.include(none.body.field_errors[0].message, "takes no query parameters")
      assert.strictEqual((yield* api("GET", "/v1/machines?limit=5")).status, 200)
      // The caller is checked first: who may not call the route hears that, not the query's rules.
      assert.strictEqual((yield* request(server.url, "GET", "/v1/machines?limt=5")).status, 401)
    }))

  it.scopedLive("a refused value is quoted back by a short prefix only", () =>
    Effect.gen(function*() {
      const { api } = yield* setup
      const script = "x".repeat(200_000)
      const reply = yield* api("POST", "/v1/machines", { json: { name: "big", setup_script: script, start: 7 } })
      assert.strictEqual(reply.status, 422)
      assert.isBelow(reply.text.length, 2_000, reply.text.slice(0, 300))
      const fields = reply.body.field_errors.map((error: { field: string }) => error.field)
      assert.include(fields, "start")
      assert.include(fields, "setup_script")
      const huge = yield* api("POST", "/v1/machines", { json: { name: "big", ["y".repeat(5_000)]: 1 } })
      assert.strictEqual(huge.status, 422)
      assert.isBelow(huge.text.length, 2_000)
    }))
})
