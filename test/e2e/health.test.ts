/** `/healthz` (the process answers) and `/readyz` (the database answers, machines can run), for anyone. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "../support/Http.js"
import { startServer } from "../support/TestServer.js"

describe("health", () => {
  it.scopedLive("healthz and readyz answer without a credential; readyz names what is not ready", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const health = yield* request(server.url, "GET", "/healthz")
      assert.strictEqual(health.status, 200)
      assert.deepStrictEqual(health.body, { status: "ok" })
      const ready = yield* request(server.url, "GET", "/readyz")
      assert.strictEqual(ready.status, 200, ready.text)
      assert.deepStrictEqual(ready.body, { status: "ready", database: "ok", runtime: "ok" })
      assert.strictEqual((yield* request(server.url, "POST", "/healthz")).status, 405)

      const unable = yield* startServer({}, (inner) => ({ ...inner, unavailable: "no cgroup delegation (test)" }))
      const notReady = yield* request(unable.url, "GET", "/readyz")
      assert.strictEqual(notReady.status, 503)
      assert.strictEqual(notReady.body.code, "not_ready")
      assert.include(notReady.body.detail, "machines cannot run on this host now")
      assert.notInclude(notReady.body.detail, "cgroup", "the host's reason is for the operator's log")
      assert.strictEqual((yield* request(unable.url, "GET", "/healthz")).status, 200)
    }))
})
