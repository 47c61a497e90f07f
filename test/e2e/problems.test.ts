import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as NodeHttp from "node:http"
import { client, request } from "../support/Http.js"
import { startServer } from "../support/TestServer.js"

const assertProblem = (reply: { status: number; headers: Headers; body: any }, status: number, code: string) => {
  assert.strictEqual(reply.status, status, JSON.stringify(reply.body))
  assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
  assert.strictEqual(reply.body.status, status)
  assert.strictEqual(reply.body.code, code)
  assert.strictEqual(reply.body.type, `urn:svc:problem:${code}`)
  assert.isString(reply.body.title)
  assert.isString(reply.body.detail)
  assert.isString(reply.headers.get("x-correlation-id"))
}

/** Sends a chunked body with no Content-Length, so only the streaming limit can stop it. */
const chunkedPost = (url: string, path: string, bytes: number) =>
  Effect.async<{ status: number; body: string }>((resume) => {
    const req = NodeHttp.request(url + path, {
      method: "POST",
      headers: { "content-type": "application/json", "transfer-encoding": "chunked" }
    }, (res) => {
      let body = ""
      res.on("data", (chunk) => (body += chunk))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body })))
    })
    req.on("error", () => resume(Effect.succeed({ status: 0, body: "" })))
    const chunk = "x".repeat(8192)
    req.write(`{"email":"`)
    for (let sent = 0; sent < bytes; sent += chunk.length) req.write(chunk)
    req.end(`"}`)
  })

describe("problem details", () => {
  it.scoped("an unknown route answers 404 resource_not_found with a correlation id", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const reply = yield* request(server.url, "GET", "/v1/nothing-here")
      assertProblem(reply, 404, "resource_not_found")
    }))

  it.scoped("a well-formed incoming correlation id is echoed; a malformed one is replaced", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const kept = yield* request(server.url, "GET", "/v1/auth/providers", {
        headers: { "x-correlation-id": "abc-123" }
      })
      assert.strictEqual(kept.headers.get("x-correlation-id"), "abc-123")
      const replaced = yield* request(server.url, "GET", "/v1/me", { headers: { "x-correlation-id": "bad id!" } })
      assert.match(replaced.headers.get("x-correlation-id")!, /^[0-9a-f-]{36}$/)
    }))

  it.scoped("a body that fails validation answers 422 with field_errors and changes nothing", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* server.bootstrap("owner@example.com")
      const http = client(server.url, { key: owner.api_key })
      const reply = yield* http("POST", "/v1/api-keys", { json: { name: "", preset: "everything" } })
      assertProblem(reply, 422, "invalid_request")
      const fields = reply.body.field_errors.map((error: { field: string }) => error.field).sort()
      assert.deepStrictEqual(fields, ["name", "preset"])
      const list = yield* http("GET", "/v1/api-keys")
      assert.strictEqual(list.body.items.length, 1)
    }))

  it.scoped("a body that is not JSON answers 422", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const reply = yield* request(server.url, "POST", "/v1/auth/email/start", {
        body: "{not json",
        headers: { "content-type": "application/json" }
      })
      assertProblem(reply, 422, "invalid_request")
      assert.strictEqual(reply.body.field_errors[0].field, "body")
    }))

  it.scoped("a body above the limit answers 413 body_too_large, declared or streamed", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ maxBodyBytes: 4096 })
      const declared = yield* request(server.url, "POST", "/v1/auth/email/start", {
        json: { email: "a".repeat(5000) + "@example.com" }
      })
      assertProblem(declared, 413, "body_too_large")
      const streamed = yield* chunkedPost(server.url, "/v1/auth/email/start", 64 * 1024)
      assert.strictEqual(streamed.status, 413)
      assert.strictEqual(JSON.parse(streamed.body).code, "body_too_large")
    }))

  it.scoped("rate limits answer 429 rate_limited with Retry-After, and lift when the window passes", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-22T12:00:00Z"))
      const server = yield* startServer()
      const start = () => request(server.url, "POST", "/v1/auth/email/start", { json: { email: "x@example.com" } })
      for (let i = 0; i < 5; i++) assert.strictEqual((yield* start()).status, 202)
      const limited = yield* start()
      assertProblem(limited, 429, "rate_limited")
      const retryAfter = Number(limited.headers.get("retry-after"))
      assert.isTrue(retryAfter > 0 && retryAfter <= 900)
      yield* TestClock.adjust("15 minutes")
      assert.strictEqual((yield* start()).status, 202)
    }))

  it.scoped("GET /v1/openapi.json serves the document and /docs renders it", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const spec = yield* request(server.url, "GET", "/v1/openapi.json")
      assert.strictEqual(spec.status, 200)
      assert.strictEqual(spec.body.openapi, "3.1.0")
      for (
        const path of ["/v1/api-keys", "/v1/me", "/v1/auth/email/start", "/v1/organizations/{organization_id}/members"]
      ) {
        assert.property(spec.body.paths, path)
      }
      const docs = yield* request(server.url, "GET", "/docs")
      assert.strictEqual(docs.status, 200)
      assert.include(docs.text, "<html")
    }))
})
