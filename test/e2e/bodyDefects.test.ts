/** Bodies that once answered 500 (found by test/e2e/fuzz.test.ts) answer 422 with `field_errors`. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { nestsWithin } from "../../src/kernel/http/BodyReaders.js"
import { client } from "../support/Http.js"
import { startServer } from "../support/TestServer.js"

const machine = "0190d9a2-0000-7000-8000-000000000001"

describe("bodies the API cannot read", () => {
  it.scoped("JSON nested thousands deep answers 422, a body sent as multipart/form-data 415 (422 when empty)", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* server.bootstrap("bodies@example.com")
      const api = client(server.url, { key: owner.api_key })
      const deep = yield* api("POST", `/v1/machines/${machine}/exec`, {
        body: "[".repeat(5_000) + "]".repeat(5_000),
        headers: { "content-type": "application/json" }
      })
      assert.strictEqual(deep.status, 422)
      assert.deepStrictEqual(deep.body.field_errors, [{ field: "body", message: "nests deeper than 64 levels" }])
      // Brackets inside strings are text, not nesting.
      const inString = yield* api("POST", `/v1/machines/${machine}/exec`, { json: { shell: "[".repeat(500) } })
      assert.strictEqual(inString.status, 404)
      const multipart = yield* api("POST", "/v1/environments", {
        body: "{}",
        headers: { "content-type": "multipart/form-data; boundary=x" }
      })
      // A JSON route refuses the media type itself (415); nothing parses the body as multipart.
      assert.strictEqual(multipart.status, 415)
      assert.strictEqual(multipart.body.code, "unsupported_media_type")
      // With no body at all the multipart parser waited forever.
      const empty = yield* api("PATCH", `/v1/machines/${machine}`, {
        headers: { "content-type": "multipart/form-data; boundary=x" }
      })
      assert.strictEqual(empty.status, 422)
    }))

  it("nestsWithin counts arrays and objects, not brackets in strings or after escapes", () => {
    assert.isTrue(nestsWithin("{\"a\":[[1]]}", 3))
    assert.isFalse(nestsWithin("{\"a\":[[1]]}", 2))
    assert.isTrue(nestsWithin("\"[[[[\\\"[[[\"", 0))
    assert.isTrue(nestsWithin("", 0))
  })
})
