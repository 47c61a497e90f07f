import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { client, CookieJar, request } from "../support/Http.js"
import { codeFrom, latestMailTo, linkFrom, signIn } from "../support/SignIn.js"
import { startServer } from "../support/TestServer.js"

const now = Date.parse("2026-11-22T12:00:00Z")

describe("email sign-in", () => {
  it.scoped("a code signs in, creates the user with an organization they own, and sets session and CSRF cookies", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const server = yield* startServer()
      const jar = new CookieJar()
      const http = client(server.url, { jar })
      const started = yield* http("POST", "/v1/auth/email/start", {
        json: { email: "New.User@Example.com", return_to: "/machines" }
      })
      assert.strictEqual(started.status, 202)
      assert.isString(started.body.message)
      assert.isString(jar.get("svc_email_state"))
      const mail = yield* latestMailTo(server, "new.user@example.com")
      const verified = yield* http("POST", "/v1/auth/email/verify", {
        json: { email: "new.user@example.com", code: codeFrom(mail.text) }
      })
      assert.strictEqual(verified.status, 200)
      assert.deepStrictEqual(verified.body, { return_to: "/machines" })
      const cookies = verified.headers.getSetCookie().join("\n")
      assert.match(cookies, /svc_session=[^;]+;.*HttpOnly/)
      assert.match(cookies, /svc_csrf=/)
      const me = yield* http("GET", "/v1/me")
      assert.strictEqual(me.status, 200)
      assert.strictEqual(me.body.user.email, "new.user@example.com")
      assert.strictEqual(me.body.organizations.length, 1)
      assert.strictEqual(me.body.organizations[0].role, "owner")
      assert.strictEqual(me.body.active_organization_id, me.body.organizations[0].id)
      assert.strictEqual(me.body.credential.kind, "session")
    }))

  it.scoped("the answer to start does not depend on whether the account exists", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      yield* server.bootstrap("known@example.com")
      const known = yield* request(server.url, "POST", "/v1/auth/email/start", { json: { email: "known@example.com" } })
      const unknown = yield* request(server.url, "POST", "/v1/auth/email/start", {
        json: { email: "other@example.com" }
      })
      assert.strictEqual(known.status, unknown.status)
      assert.deepStrictEqual(known.body, unknown.body)
    }))

  it.scoped("a wrong, superseded, used or expired code answers 400 invalid_code", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const server = yield* startServer()
      const email = "codes@example.com"
      const start = request(server.url, "POST", "/v1/auth/email/start", { json: { email } })
      const verify = (code: string | undefined) =>
        request(server.url, "POST", "/v1/auth/email/verify", { json: { email, code } })

      yield* start
      const first = codeFrom((yield* latestMailTo(server, email)).text)!
      yield* start
      const second = codeFrom((yield* latestMailTo(server, email)).text)!
      if (first !== second) assert.strictEqual((yield* verify(first)).body.code, "invalid_code")
      const wrong = second === "000000" ? "000001" : "000000"
      const reply = yield* verify(wrong)
      assert.strictEqual(reply.status, 400)
      assert.strictEqual(reply.body.code, "invalid_code")
      assert.strictEqual((yield* verify(second)).status, 200)
      assert.strictEqual((yield* verify(second)).body.code, "invalid_code")

      yield* start
      const late = codeFrom((yield* latestMailTo(server, email)).text)!
      yield* TestClock.adjust("10 minutes")
      assert.strictEqual((yield* verify(late)).body.code, "invalid_code")
    }))

  it.scoped("five wrong codes close the sign-in: the right code then fails too", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const server = yield* startServer()
      const email = "guess@example.com"
      yield* request(server.url, "POST", "/v1/auth/email/start", { json: { email } })
      const code = codeFrom((yield* latestMailTo(server, email)).text)!
      const wrong = code === "111111" ? "222222" : "111111"
      for (let i = 0; i < 5; i++) {
        const reply = yield* request(server.url, "POST", "/v1/auth/email/verify", { json: { email, code: wrong } })
        assert.strictEqual(reply.body.code, "invalid_code")
      }
      const right = yield* request(server.url, "POST", "/v1/auth/email/verify", { json: { email, code } })
      assert.strictEqual(right.body.code, "invalid_code")
    }))

  it.scoped("a magic link signs in only in the browser that asked, once, within ten minutes", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const server = yield* startServer()
      const email = "link@example.com"
      const browser = new CookieJar()
      yield* request(server.url, "POST", "/v1/auth/email/start", {
        json: { email, return_to: "/after" },
        jar: browser
      })
      const link = linkFrom((yield* latestMailTo(server, email)).text)!
      const path = link.slice(server.url.length)

      const scanner = yield* request(server.url, "GET", path)
      assert.strictEqual(scanner.status, 303)
      assert.strictEqual(scanner.headers.get("location"), `${server.url}/sign-in?error=session_expired`)

      const opened = yield* request(server.url, "GET", path, { jar: browser })
      assert.strictEqual(opened.status, 303)
      assert.strictEqual(opened.headers.get("location"), `${server.url}/after`)
      assert.isString(browser.get("svc_session"))
      assert.isUndefined(browser.get("svc_email_state"))
      const me = yield* request(server.url, "GET", "/v1/me", { jar: browser })
      assert.strictEqual(me.body.user.email, email)

      const again = yield* request(server.url, "GET", path, { jar: browser })
      assert.strictEqual(again.headers.get("location"), `${server.url}/sign-in?error=session_expired`)
    }))

  it.scoped("a magic link expires after ten minutes", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const server = yield* startServer()
      const browser = new CookieJar()
      yield* request(server.url, "POST", "/v1/auth/email/start", { json: { email: "late@example.com" }, jar: browser })
      const link = linkFrom((yield* latestMailTo(server, "late@example.com")).text)!
      yield* TestClock.adjust("601 seconds")
      const opened = yield* request(server.url, "GET", link.slice(server.url.length), { jar: browser })
      assert.strictEqual(opened.headers.get("location"), `${server.url}/sign-in?error=session_expired`)
    }))

  it.scoped("return_to outside the UI origin becomes /", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      for (const returnTo of ["https://evil.example/", "//evil.example/x", "/\\evil", "relative"]) {
        const email = `r${Math.random().toString(36).slice(2)}@example.com`
        yield* request(server.url, "POST", "/v1/auth/email/start", { json: { email, return_to: returnTo } })
        const code = codeFrom((yield* latestMailTo(server, email)).text)
        const verified = yield* request(server.url, "POST", "/v1/auth/email/verify", { json: { email, code } })
        assert.strictEqual(verified.body.return_to, "/")
      }
    }))

  it.scoped("with mail off, start answers 503 email_unavailable and verify 404 unsupported_provider", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ mail: { kind: "off" } })
      const reply = yield* request(server.url, "POST", "/v1/auth/email/start", { json: { email: "a@example.com" } })
      assert.strictEqual(reply.status, 503)
      assert.strictEqual(reply.body.code, "email_unavailable")
      const verify = yield* request(server.url, "POST", "/v1/auth/email/verify", {
        json: { email: "a@example.com", code: "123456" }
      })
      assert.strictEqual(verify.status, 404)
      assert.strictEqual(verify.body.code, "unsupported_provider")
      const providers = yield* request(server.url, "GET", "/v1/auth/providers")
      assert.deepStrictEqual(providers.body, { access: "open", providers: [], waitlist_url: null })
    }))

  it.scoped("logout ends the session; it needs CSRF and refuses API keys", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const browser = yield* signIn(server, "out@example.com")
      const noCsrf = yield* browser.http("POST", "/v1/auth/logout")
      assert.strictEqual(noCsrf.body.code, "csrf_invalid")
      const owner = yield* server.bootstrap("keyholder@example.com")
      const withKey = yield* request(server.url, "POST", "/v1/auth/logout", {
        headers: { authorization: `Bearer ${owner.api_key}` }
      })
      assert.strictEqual(withKey.status, 403)
      assert.strictEqual(withKey.body.code, "session_required")
      const token = browser.jar.get("svc_session")!
      const out = yield* browser.http("POST", "/v1/auth/logout", { headers: browser.withCsrf })
      assert.strictEqual(out.status, 204)
      assert.isUndefined(browser.jar.get("svc_session"))
      const replayed = yield* request(server.url, "GET", "/v1/me", { headers: { cookie: `svc_session=${token}` } })
      assert.strictEqual(replayed.status, 401)
      assert.strictEqual(replayed.body.code, "unauthenticated")
    }))
})
