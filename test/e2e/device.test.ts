/**
 * The device authorization grant (RFC 8628) end to end: codes, polling with `slow_down`, approval
 * with organization, preset, name and lifetime, the key answered once, denial (audited), expiry on
 * the TestClock, every token error in RFC shape with `Cache-Control: no-store`, and rate limits.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, TestClock } from "effect"
import { AuditLog } from "../../src/kernel/AuditLog.js"
import { request } from "../support/Http.js"
import { signIn } from "../support/SignIn.js"
import { startServer, type TestServer } from "../support/TestServer.js"

const grantType = "urn:ietf:params:oauth:grant-type:device_code"

const newCode = (server: TestServer, json: unknown = {}) =>
  Effect.map(request(server.url, "POST", "/v1/auth/device/code", { json }), (reply) => {
    assert.strictEqual(reply.status, 200, reply.text)
    return reply
  })

const poll = (server: TestServer, deviceCode: string) =>
  request(server.url, "POST", "/v1/auth/device/token", { json: { device_code: deviceCode, grant_type: grantType } })

/** Asserts an RFC 8628 error answer: 400, `{error, error_description}` only, not cached. */
const tokenError = (reply: { status: number; body: any; headers: Headers }, error: string) => {
  assert.strictEqual(reply.status, 400)
  assert.deepStrictEqual(Object.keys(reply.body).sort(), ["error", "error_description"])
  assert.strictEqual(reply.body.error, error)
  assert.strictEqual(reply.headers.get("cache-control"), "no-store")
}

describe("device authorization", () => {
  it.scoped("a device gets a code pair, polls, and receives the approved key exactly once", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const code = yield* newCode(server, { client_name: "laptop", scope: "full_access" })
      assert.strictEqual(code.headers.get("cache-control"), "no-store")
      const { device_code, user_code } = code.body
      assert.match(user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
      assert.deepStrictEqual(code.body, {
        device_code,
        user_code,
        verification_uri: `${server.url}/device`,
        verification_uri_complete: `${server.url}/device?user_code=${user_code}`,
        expires_in: 600,
        interval: 5
      })

      tokenError(yield* poll(server, device_code), "authorization_pending")
      tokenError(yield* poll(server, device_code), "slow_down")
      yield* TestClock.adjust("9 seconds")
      tokenError(yield* poll(server, device_code), "slow_down") // the interval is 10 s now, then 15 s
      yield* TestClock.adjust("15 seconds")
      tokenError(yield* poll(server, device_code), "authorization_pending")

      const ada = yield* signIn(server, "ada@example.com")
      const organizationId = (yield* ada.http("GET", "/v1/me")).body.organizations[0].id
      const typed = user_code.toLowerCase().replace("-", " - ")
      const described = yield* ada.http("GET", `/v1/auth/device?user_code=${encodeURIComponent(typed)}`)
      assert.strictEqual(described.status, 200)
      assert.deepStrictEqual(described.body, {
        client_name: "laptop",
        requested_scope: "full_access",
        user_code,
        expires_at: new Date(600_000).toISOString()
      })

      const stranger = yield* server.bootstrap("stranger@example.com")
      const foreign = yield* ada.http("POST", "/v1/auth/device/approve", {
        json: { user_code },
        headers: { ...ada.withCsrf, "x-organization-id": stranger.organization_id }
      })
      assert.strictEqual(foreign.status, 404)
      const approved = yield* ada.http("POST", "/v1/auth/device/approve", {
        json: { user_code, preset: "read_only", name: "Ada's laptop", expires_in_days: 30 },
        headers: { ...ada.withCsrf, "x-organization-id": organizationId }
      })
      assert.strictEqual(approved.status, 200, approved.text)
      assert.deepStrictEqual(approved.body, {
        user_code,
        organization_id: organizationId,
        preset: "read_only",
        expires_in_days: 30
      })
      const twice = yield* ada.http("POST", "/v1/auth/device/approve", {
        json: { user_code },
        headers: { ...ada.withCsrf, "x-organization-id": organizationId }
      })
      assert.strictEqual(twice.status, 404)

      yield* TestClock.adjust("15 seconds")
      const issued = yield* poll(server, device_code)
      assert.strictEqual(issued.status, 200, issued.text)
      assert.strictEqual(issued.headers.get("cache-control"), "no-store")
      assert.strictEqual(issued.body.token_type, "Bearer")
      assert.strictEqual(issued.body.scope, "read_only")
      assert.strictEqual(issued.body.expires_in, 30 * 86400)
      assert.strictEqual(issued.body.api_key.name, "Ada's laptop")
      assert.strictEqual(issued.body.api_key.organization_id, organizationId)
      const me = yield* request(server.url, "GET", "/v1/me", {
        headers: { authorization: `Bearer ${issued.body.access_token}` }
      })
      assert.strictEqual(me.body.user.email, "ada@example.com")
      assert.deepStrictEqual(me.body.credential, {
        kind: "api_key",
        organization_id: organizationId,
        preset: "read_only"
      })
      assert.strictEqual(issued.body.api_key.created_by, me.body.user.id)

      yield* TestClock.adjust("15 seconds")
      tokenError(yield* poll(server, device_code), "invalid_grant")
    }))

  it.scoped("defaults: client name, scope, key name and a 90-day key", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const code = yield* newCode(server)
      const ada = yield* signIn(server, "ada@example.com")
      const organizationId = (yield* ada.http("GET", "/v1/me")).body.organizations[0].id
      const described = yield* ada.http("GET", `/v1/auth/device?user_code=${code.body.user_code}`)
      assert.strictEqual(described.body.client_name, "svc CLI")
      assert.strictEqual(described.body.requested_scope, "create_and_use")
      const approved = yield* ada.http("POST", "/v1/auth/device/approve", {
        json: { user_code: code.body.user_code, preset: null, name: null, expires_in_days: null },
        headers: { ...ada.withCsrf, "x-organization-id": organizationId }
      })
      assert.strictEqual(approved.body.preset, "create_and_use")
      assert.strictEqual(approved.body.expires_in_days, 90)
      const issued = yield* poll(server, code.body.device_code)
      assert.strictEqual(issued.body.api_key.name, "svc CLI (device)")
      assert.strictEqual(issued.body.expires_in, 90 * 86400)
    }))

  it.scoped("denying answers the next poll access_denied and is audited in the organization", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const code = yield* newCode(server)
      const ada = yield* signIn(server, "ada@example.com")
      const organizationId = (yield* ada.http("GET", "/v1/me")).body.organizations[0].id
      const noCsrf = yield* ada.http("POST", "/v1/auth/device/deny", {
        json: { user_code: code.body.user_code },
        headers: { "x-organization-id": organizationId }
      })
      assert.strictEqual(noCsrf.body.code, "csrf_invalid")
      const denied = yield* ada.http("POST", "/v1/auth/device/deny", {
        json: { user_code: code.body.user_code },
        headers: { ...ada.withCsrf, "x-organization-id": organizationId }
      })
      assert.strictEqual(denied.status, 204)
      tokenError(yield* poll(server, code.body.device_code), "access_denied")
      const again = yield* ada.http("GET", `/v1/auth/device?user_code=${code.body.user_code}`)
      assert.strictEqual(again.status, 404)
      const entries = yield* Context.get(server.context, AuditLog).list({ organizationId, limit: 10 })
      assert.deepStrictEqual(entries.map((entry) => [entry.action, entry.actor_kind]), [["device.deny", "user"]])
    }))

  it.scoped("a code expires after ten minutes: the poll says expired_token and nobody can approve it", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const code = yield* newCode(server)
      const ada = yield* signIn(server, "ada@example.com")
      yield* TestClock.adjust("600 seconds")
      tokenError(yield* poll(server, code.body.device_code), "expired_token")
      const late = yield* ada.http("GET", `/v1/auth/device?user_code=${code.body.user_code}`)
      assert.strictEqual(late.status, 404)
      assert.strictEqual(late.body.code, "resource_not_found")
    }))

  it.scoped("malformed polls get RFC errors, never problem details; API keys cannot decide", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const token = (init: { json?: unknown; body?: string; headers?: Record<string, string> }) =>
        request(server.url, "POST", "/v1/auth/device/token", init)
      tokenError(yield* token({ json: {} }), "invalid_request")
      tokenError(yield* token({ body: "", headers: { "content-type": "application/json" } }), "invalid_request")
      tokenError(yield* token({ json: { device_code: 5, grant_type: grantType } }), "invalid_request")
      tokenError(yield* token({ json: [1, 2] }), "invalid_request")
      tokenError(
        yield* token({ json: { device_code: "x", grant_type: "authorization_code" } }),
        "unsupported_grant_type"
      )
      tokenError(
        yield* token({ json: { device_code: "unknown", grant_type: grantType, client_id: "cli" } }),
        "invalid_grant"
      )
      // A typo is never ignored, but answered in the RFC's shape.
      tokenError(
        yield* token({ json: { device_code: "unknown", grant_type: grantType, grant_typ: 1 } }),
        "invalid_request"
      )

      const owner = yield* server.bootstrap("owner@example.com")
      const byKey = yield* request(server.url, "GET", "/v1/auth/device?user_code=BCDF-GHJK", {
        headers: { authorization: `Bearer ${owner.api_key}` }
      })
      assert.strictEqual(byKey.status, 403)
      assert.strictEqual(byKey.body.code, "session_required")
      const anonymous = yield* request(server.url, "GET", "/v1/auth/device?user_code=BCDF-GHJK")
      assert.strictEqual(anonymous.status, 401)
      const badBody = yield* request(server.url, "POST", "/v1/auth/device/code", { json: { client_name: "" } })
      assert.strictEqual(badBody.status, 422)
      assert.strictEqual(badBody.body.field_errors[0].field, "client_name")
    }))

  it.scoped("code requests and code lookups are rate limited with Retry-After", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      for (let i = 0; i < 20; i++) yield* newCode(server)
      const limited = yield* request(server.url, "POST", "/v1/auth/device/code", { json: {} })
      assert.strictEqual(limited.status, 429)
      assert.strictEqual(limited.body.code, "rate_limited")
      assert.isTrue(Number(limited.headers.get("retry-after")) > 0)

      const ada = yield* signIn(server, "ada@example.com")
      for (let i = 0; i < 30; i++) {
        assert.strictEqual((yield* ada.http("GET", "/v1/auth/device?user_code=BCDF-GHJK")).status, 404)
      }
      const guessing = yield* ada.http("GET", "/v1/auth/device?user_code=BCDF-GHJK")
      assert.strictEqual(guessing.status, 429)
      assert.isString(guessing.headers.get("retry-after"))
      yield* TestClock.adjust("10 minutes")
      assert.strictEqual((yield* ada.http("GET", "/v1/auth/device?user_code=BCDF-GHJK")).status, 404)
    }))
})
