/**
 * The reference as a browser gets it (issue 23, item 5): the /docs page served gzipped to clients
 * that accept it, and a document whose security schemes let that page send a key, a session or the
 * operator token.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeHttp from "node:http"
import * as NodeZlib from "node:zlib"
import { acceptsGzip } from "../../src/Http.js"
import { request } from "../support/Http.js"
import { startServer } from "../support/TestServer.js"

/** A GET whose body is read as sent (fetch would inflate it). */
const rawGet = (url: string, headers: Record<string, string>) =>
  Effect.async<{ status: number; headers: NodeHttp.IncomingHttpHeaders; body: Buffer }>((resume) => {
    NodeHttp.get(url, { headers }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on(
        "end",
        () =>
          resume(
            Effect.succeed({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) })
          )
      )
    }).on("error", (error) => resume(Effect.die(error)))
  })

// The first /docs builds the page (the whole reference) on a loaded host: generous.
describe("the docs page and the document", { timeout: 90_000 }, () => {
  it.scoped("/docs is gzipped when the client accepts it, and the same page otherwise", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const plain = yield* rawGet(`${server.url}/docs`, {})
      assert.strictEqual(plain.status, 200)
      assert.isUndefined(plain.headers["content-encoding"])
      assert.include(plain.headers["content-type"], "text/html")
      assert.include(plain.body.toString("utf8"), "<title>svc</title>")
      const gzipped = yield* rawGet(`${server.url}/docs`, { "accept-encoding": "gzip, deflate, br" })
      assert.strictEqual(gzipped.status, 200)
      assert.strictEqual(gzipped.headers["content-encoding"], "gzip")
      assert.strictEqual(gzipped.headers["vary"], "accept-encoding")
      assert.isBelow(gzipped.body.length, plain.body.length / 3)
      assert.isTrue(NodeZlib.gunzipSync(gzipped.body).equals(plain.body))
      const refused = yield* rawGet(`${server.url}/docs`, { "accept-encoding": "gzip;q=0, identity" })
      assert.isUndefined(refused.headers["content-encoding"])
    }))

  it("Accept-Encoding: gzip is taken unless refused with q=0", () => {
    assert.isTrue(acceptsGzip("gzip"))
    assert.isTrue(acceptsGzip("br;q=1.0, gzip;q=0.8, *;q=0.1"))
    assert.isTrue(acceptsGzip("*"))
    assert.isFalse(acceptsGzip(undefined))
    assert.isFalse(acceptsGzip("br, deflate"))
    assert.isFalse(acceptsGzip("gzip;q=0"))
    assert.isFalse(acceptsGzip("identity"))
  })

  it.scoped("GET /v1/openapi.json names the credentials each route takes", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const spec = (yield* request(server.url, "GET", "/v1/openapi.json")).body
      assert.deepStrictEqual(Object.keys(spec.components.securitySchemes).sort(), [
        "apiKey",
        "csrf",
        "operatorToken",
        "session"
      ])
      assert.deepStrictEqual(spec.paths["/v1/machines"].post.security, [{ apiKey: [] }, { session: [], csrf: [] }])
      assert.deepStrictEqual(spec.paths["/v1/auth/email/start"].post.security, [])
    }))
})
