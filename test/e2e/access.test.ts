import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, TestClock } from "effect"
import { client, request } from "../support/Http.js"
import { signIn } from "../support/SignIn.js"
import { startServer, type TestServer } from "../support/TestServer.js"

const presets = ["read_only", "use_existing", "create_and_use", "full_access"] as const

/** An owner with a session, a key of every preset, and a second organization they do not belong to. */
const setup = (server: TestServer) =>
  Effect.gen(function*() {
    const owner = yield* server.bootstrap("owner@example.com")
    const stranger = yield* server.bootstrap("stranger@example.com")
    const full = client(server.url, { key: owner.api_key })
    const keys: Record<string, string> = {}
    for (const preset of presets) {
      const created = yield* full("POST", "/v1/api-keys", { json: { name: preset, preset } })
      assert.strictEqual(created.status, 201, created.text)
      keys[preset] = created.body.secret
    }
    const browser = yield* signIn(server, "owner@example.com")
    return { owner, stranger, keys, browser, full }
  })

interface Route {
  readonly access: "R" | "F" | "S"
  readonly method: string
  readonly path: (org: string, victim: string) => string
  readonly json?: (org: string) => unknown
  readonly ok: number
}

const routes: ReadonlyArray<Route> = [
  { access: "R", method: "GET", path: () => "/v1/me", ok: 200 },
  { access: "R", method: "GET", path: (org) => `/v1/organizations/${org}/members`, ok: 200 },
  { access: "F", method: "GET", path: () => "/v1/api-keys", ok: 200 },
  {
    access: "F",
    method: "POST",
    path: () => "/v1/api-keys",
    json: () => ({ name: "made", preset: "read_only" }),
    ok: 201
  },
  { access: "F", method: "DELETE", path: (_, victim) => `/v1/api-keys/${victim}`, ok: 204 },
  {
    access: "S",
    method: "PUT",
    path: () => "/v1/me/active-organization",
    json: (org) => ({ organization_id: org }),
    ok: 200
  },
  { access: "S", method: "GET", path: (org) => `/v1/organizations/${org}/invitations`, ok: 200 },
  {
    access: "S",
    method: "POST",
    path: (org) => `/v1/organizations/${org}/invitations`,
    json: () => ({ email: "invitee@example.com", role: "member" }),
    ok: 201
  },
  { access: "S", method: "POST", path: () => "/v1/auth/logout", ok: 204 }
]

const expectedForKey = (access: Route["access"], preset: (typeof presets)[number]) =>
  access === "R" ? "ok" : access === "S" ? "session_required" : preset === "full_access" ? "ok" : "insufficient_scope"

describe("authentication and access matrix", () => {
  it.scoped("every preset against every access code", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { full, keys, owner } = yield* setup(server)
      for (const route of routes) {
        for (const preset of presets) {
          const victim = (yield* full("POST", "/v1/api-keys", { json: { name: "victim", preset: "read_only" } })).body
            .api_key.id
          const reply = yield* request(server.url, route.method, route.path(owner.organization_id, victim), {
            headers: { authorization: `Bearer ${keys[preset]}` },
            ...(route.json ? { json: route.json(owner.organization_id) } : {})
          })
          const expected = expectedForKey(route.access, preset)
          const label = `${route.method} ${route.path("ORG", "ID")} with ${preset}`
          if (expected === "ok") assert.strictEqual(reply.status, route.ok, `${label}: ${reply.text}`)
          else {
            assert.strictEqual(reply.status, 403, label)
            assert.strictEqual(reply.body.code, expected, label)
          }
        }
      }
    }))

  it.scoped("a session passes every access code, and changing routes need the CSRF token of that session", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { browser, full, owner } = yield* setup(server)
      const other = yield* signIn(server, "owner@example.com")
      for (const route of routes) {
        const victim = (yield* full("POST", "/v1/api-keys", { json: { name: "victim", preset: "read_only" } })).body
          .api_key.id
        const send = (headers: Record<string, string>) =>
          browser.http(route.method, route.path(owner.organization_id, victim), {
            headers: { ...headers, "x-organization-id": owner.organization_id },
            ...(route.json ? { json: route.json(owner.organization_id) } : {})
          })
        if (route.method !== "GET") {
          for (const headers of [{}, { "x-csrf-token": "wrong" }, other.withCsrf]) {
            const refused = yield* send(headers)
            assert.strictEqual(refused.status, 403, `${route.method} ${route.path("ORG", "ID")}`)
            assert.strictEqual(refused.body.code, "csrf_invalid")
          }
        }
        const reply = yield* send(browser.withCsrf)
        assert.strictEqual(reply.status, route.ok, `${route.method} ${route.path("ORG", "ID")}: ${reply.text}`)
      }
    }))

  it.scoped("missing, malformed, unknown, revoked and expired credentials answer 401", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-22T12:00:00Z"))
      const server = yield* startServer()
      const { full } = yield* setup(server)
      const me = (authorization?: string) =>
        request(server.url, "GET", "/v1/me", authorization ? { headers: { authorization } } : {})
      const none = yield* me()
      assert.strictEqual(none.status, 401)
      assert.strictEqual(none.body.code, "unauthenticated")
      for (const bad of ["Bearer nope", "Basic abc", "Bearer svc_abcdefgh_" + "x".repeat(40)]) {
        const reply = yield* me(bad)
        assert.strictEqual(reply.status, 401, bad)
        assert.strictEqual(reply.body.code, "invalid_api_key", bad)
      }
      const short =
        (yield* full("POST", "/v1/api-keys", { json: { name: "short", preset: "read_only", expires_in_days: 1 } }))
          .body
      const revoked = (yield* full("POST", "/v1/api-keys", { json: { name: "gone", preset: "read_only" } })).body
      assert.strictEqual((yield* me(`Bearer ${short.secret}`)).status, 200)
      assert.strictEqual((yield* full("DELETE", `/v1/api-keys/${revoked.api_key.id}`)).status, 204)
      assert.strictEqual((yield* me(`Bearer ${revoked.secret}`)).body.code, "invalid_api_key")
      yield* TestClock.adjust("1 days")
      assert.strictEqual((yield* me(`Bearer ${short.secret}`)).body.code, "invalid_api_key")
      const cookie = yield* request(server.url, "GET", "/v1/me", { headers: { cookie: "svc_session=forged" } })
      assert.strictEqual(cookie.body.code, "unauthenticated")
    }), { timeout: 120_000 }) // a simulated day runs every periodic worker's rounds (the meter's, the abuse guard's)

  it.scoped("X-Organization-ID: a key fixes the organization; a session must send it", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { browser, full, owner, stranger } = yield* setup(server)
      const withHeader = (value: string) => ({ headers: { "x-organization-id": value } })
      assert.strictEqual((yield* full("GET", "/v1/api-keys", withHeader(owner.organization_id))).status, 200)
      const mismatch = yield* full("GET", "/v1/api-keys", withHeader(stranger.organization_id))
      assert.strictEqual(mismatch.status, 403)
      assert.strictEqual(mismatch.body.code, "organization_mismatch")
      const malformed = yield* full("GET", "/v1/api-keys", withHeader("not-a-uuid"))
      assert.strictEqual(malformed.status, 422)
      assert.strictEqual(malformed.body.field_errors[0].field, "X-Organization-ID")

      // A session names the organization on every [ORG] request, active organization or not.
      const withoutHeader = yield* browser.http("GET", "/v1/api-keys")
      assert.strictEqual(withoutHeader.status, 422)
      assert.strictEqual(withoutHeader.body.code, "invalid_request")
      assert.deepStrictEqual(withoutHeader.body.field_errors, [
        { field: "X-Organization-ID", message: "is required with a browser session" }
      ])
      assert.strictEqual((yield* browser.http("GET", "/v1/api-keys", withHeader(owner.organization_id))).status, 200)
      const foreign = yield* browser.http("GET", "/v1/api-keys", withHeader(stranger.organization_id))
      assert.strictEqual(foreign.status, 404)
      assert.strictEqual(foreign.body.code, "resource_not_found")
      const cleared = yield* browser.http("PUT", "/v1/me/active-organization", {
        headers: browser.withCsrf,
        json: { organization_id: null }
      })
      assert.deepStrictEqual(cleared.body, { active_organization_id: null })
      assert.strictEqual((yield* browser.http("GET", "/v1/api-keys")).status, 422)
      const notMember = yield* browser.http("PUT", "/v1/me/active-organization", {
        headers: browser.withCsrf,
        json: { organization_id: stranger.organization_id }
      })
      assert.strictEqual(notMember.status, 404)
    }))

  it.scoped("members of another organization are not found, by key or by session", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { browser, full, owner, stranger } = yield* setup(server)
      const own = yield* full("GET", `/v1/organizations/${owner.organization_id}/members`)
      assert.strictEqual(own.status, 200)
      assert.strictEqual(own.body.items.length, 1)
      assert.deepInclude(own.body.items[0], { email: "owner@example.com", role: "owner", user_id: owner.user_id })
      for (
        const reply of [
          yield* full("GET", `/v1/organizations/${stranger.organization_id}/members`),
          yield* browser.http("GET", `/v1/organizations/${stranger.organization_id}/members`, {
            headers: { "x-organization-id": stranger.organization_id }
          })
        ]
      ) {
        assert.strictEqual(reply.status, 404)
        assert.strictEqual(reply.body.code, "resource_not_found")
      }
    }))

  it.scoped("X-Organization-ID on a route naming its organization in the path: checked as on [ORG] routes", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { browser, full, owner, stranger } = yield* setup(server)
      const own = `/v1/organizations/${owner.organization_id}/members`
      const naming = (organizationId: string) => ({ headers: { "x-organization-id": organizationId } })
      // A key fixes its organization: a header naming another one is a mismatch, even on its own path.
      const mismatch = yield* full("GET", own, naming(stranger.organization_id))
      assert.strictEqual(mismatch.status, 403)
      assert.strictEqual(mismatch.body.code, "organization_mismatch")
      assert.strictEqual((yield* full("GET", own, naming(owner.organization_id))).status, 200)
      assert.strictEqual((yield* full("GET", own)).status, 200)
      // A session names the organization it acts in, and it must be the path's.
      const bare = yield* browser.http("GET", own)
      assert.strictEqual(bare.status, 422)
      assert.deepStrictEqual(bare.body.field_errors.map((error: { field: string }) => error.field), [
        "X-Organization-ID"
      ])
      const elsewhere = yield* browser.http("GET", own, naming(stranger.organization_id))
      assert.strictEqual(elsewhere.status, 403)
      assert.strictEqual(elsewhere.body.code, "organization_mismatch")
      assert.strictEqual((yield* browser.http("GET", own, naming(owner.organization_id))).status, 200)
    }))

  it.scoped("API keys: the secret is shown once, only a hash is kept, and last_used_at is recorded", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { full } = yield* setup(server)
      const created = yield* full("POST", "/v1/api-keys", { json: { name: "ci", preset: "use_existing" } })
      const { api_key, secret } = created.body
      assert.match(secret, /^svc_[a-z0-9]{8}_[A-Za-z0-9]{32,}$/)
      assert.strictEqual(api_key.prefix, secret.slice(0, 12))
      assert.strictEqual(api_key.last_four, secret.slice(-4))
      assert.strictEqual(api_key.preset, "use_existing")
      assert.isNull(api_key.last_used_at)
      assert.strictEqual(Date.parse(api_key.expires_at) - Date.parse(api_key.created_at), 90 * 86400_000)
      yield* request(server.url, "GET", "/v1/me", { headers: { authorization: `Bearer ${secret}` } })
      const listed = (yield* full("GET", "/v1/api-keys")).body.items.find((key: any) => key.id === api_key.id)
      assert.isString(listed.last_used_at)
      assert.notProperty(listed, "secret")
      assert.notInclude(JSON.stringify((yield* full("GET", "/v1/api-keys")).body), secret)
    }))

  it.scoped("a key acts with its creator's current role: a demotion limits it at once, a removal refuses it", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* server.bootstrap("owner@example.com")
      const api = client(server.url, { key: owner.api_key })
      // Owners, admins and operators may interrupt an agent; past authorization the empty body is refused.
      const interrupt = () => api("POST", `/v1/machines/${crypto.randomUUID()}/agents/interrupt`, { json: {} })
      const membership = (statement: string) => {
        const db = new Database(server.config.databaseFile)
        db.prepare(statement).run(owner.user_id)
        db.close()
      }
      assert.strictEqual((yield* interrupt()).status, 422)
      membership("UPDATE memberships SET role = 'billing' WHERE user_id = ?")
      const demoted = yield* interrupt()
      assert.strictEqual(demoted.status, 403)
      assert.strictEqual(demoted.body.code, "forbidden")
      assert.include(demoted.body.detail, "billing")
      membership("DELETE FROM memberships WHERE user_id = ?")
      const removed = yield* interrupt()
      assert.strictEqual(removed.status, 403)
      assert.include(removed.body.detail, "no longer a member")
      assert.strictEqual((yield* api("GET", "/v1/me")).status, 200)
    }))
})
