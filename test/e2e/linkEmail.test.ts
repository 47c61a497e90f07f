/**
 * Linking a further address to a signed-in user (POST /v1/auth/link/email), by code and by magic
 * link, with the session rules of the verify route; and the sign-up policy's rule that the answer
 * to email/start never tells whether an address may sign in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { CookieJar, request } from "../support/Http.js"
import { latestMailTo, linkFrom, signIn } from "../support/SignIn.js"
import { startServer } from "../support/TestServer.js"

const linkCodeFrom = (text: string) => /link this address is (\d{6})/.exec(text)?.[1]

describe("linking an address", () => {
  it.scoped("a linking code needs its user's session and CSRF token, then the address signs in as that user", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const ada = yield* signIn(server, "ada@example.com")
      const bob = yield* signIn(server, "bob@example.com")
      const asked = yield* ada.http("POST", "/v1/auth/link/email", {
        json: { email: "Ada.Work@Example.com", return_to: "/settings" },
        headers: ada.withCsrf
      })
      assert.strictEqual(asked.status, 202)
      const code = linkCodeFrom((yield* latestMailTo(server, "ada.work@example.com")).text)!
      const body = { email: "ada.work@example.com", code }

      const anonymous = yield* request(server.url, "POST", "/v1/auth/email/verify", { json: body })
      assert.strictEqual(anonymous.status, 401)
      assert.strictEqual(anonymous.body.code, "unauthenticated")
      const other = yield* bob.http("POST", "/v1/auth/email/verify", { json: body, headers: bob.withCsrf })
      assert.strictEqual(other.status, 403)
      assert.strictEqual(other.body.code, "forbidden")
      const noCsrf = yield* ada.http("POST", "/v1/auth/email/verify", { json: body })
      assert.strictEqual(noCsrf.status, 403)
      assert.strictEqual(noCsrf.body.code, "csrf_invalid")
      const key = yield* server.bootstrap("keyholder@example.com")
      const withKey = yield* request(server.url, "POST", "/v1/auth/email/verify", {
        json: body,
        headers: { authorization: `Bearer ${key.api_key}` }
      })
      assert.strictEqual(withKey.status, 403)
      assert.strictEqual(withKey.body.code, "session_required")

      // None of the refusals used the code up.
      const linked = yield* ada.http("POST", "/v1/auth/email/verify", { json: body, headers: ada.withCsrf })
      assert.strictEqual(linked.status, 200)
      assert.deepStrictEqual(linked.body, { return_to: "/settings" })
      const again = yield* ada.http("POST", "/v1/auth/email/verify", { json: body, headers: ada.withCsrf })
      assert.strictEqual(again.body.code, "invalid_code")

      const viaWork = yield* signIn(server, "ada.work@example.com")
      const me = yield* viaWork.http("GET", "/v1/me")
      assert.strictEqual(me.body.user.email, "ada@example.com")
    }))

  it.scoped("another account's address is identity_in_use; API keys cannot ask", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      yield* signIn(server, "ada@example.com")
      const bob = yield* signIn(server, "bob@example.com")
      yield* bob.http("POST", "/v1/auth/link/email", { json: { email: "ada@example.com" }, headers: bob.withCsrf })
      const code = linkCodeFrom((yield* latestMailTo(server, "ada@example.com")).text)!
      const taken = yield* bob.http("POST", "/v1/auth/email/verify", {
        json: { email: "ada@example.com", code },
        headers: bob.withCsrf
      })
      assert.strictEqual(taken.status, 409)
      assert.strictEqual(taken.body.code, "identity_in_use")
      // The same by magic link: back to the sign-in page with the code in words.
      yield* bob.http("POST", "/v1/auth/link/email", { json: { email: "ada@example.com" }, headers: bob.withCsrf })
      const link = linkFrom((yield* latestMailTo(server, "ada@example.com")).text)!
      const opened = yield* bob.http("GET", link.slice(server.url.length))
      assert.strictEqual(opened.headers.get("location"), `${server.url}/sign-in?error=identity_in_use`)

      const key = yield* server.bootstrap("keyholder@example.com")
      const withKey = yield* request(server.url, "POST", "/v1/auth/link/email", {
        json: { email: "x@example.com" },
        headers: { authorization: `Bearer ${key.api_key}` }
      })
      assert.strictEqual(withKey.status, 403)
      assert.strictEqual(withKey.body.code, "session_required")
    }))

  it.scoped("a linking magic link works in the asking browser with its session, once", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const ada = yield* signIn(server, "ada@example.com")
      yield* ada.http("POST", "/v1/auth/link/email", {
        json: { email: "ada.home@example.com", return_to: "/done" },
        headers: ada.withCsrf
      })
      const link = linkFrom((yield* latestMailTo(server, "ada.home@example.com")).text)!
      const path = link.slice(server.url.length)

      // The same browser's state cookie without the session: not linked, and the link stays usable.
      const stateOnly = new CookieJar()
      stateOnly.cookies.set("svc_email_state", ada.jar.get("svc_email_state")!)
      const noSession = yield* request(server.url, "GET", path, { jar: stateOnly })
      assert.strictEqual(noSession.headers.get("location"), `${server.url}/sign-in?error=session_expired`)

      const opened = yield* ada.http("GET", path)
      assert.strictEqual(opened.status, 303)
      assert.strictEqual(opened.headers.get("location"), `${server.url}/done`)
      const again = yield* ada.http("GET", path)
      assert.strictEqual(again.headers.get("location"), `${server.url}/sign-in?error=session_expired`)
      const viaHome = yield* signIn(server, "ada.home@example.com")
      assert.strictEqual((yield* viaHome.http("GET", "/v1/me")).body.user.email, "ada@example.com")
    }))
})

describe("sign-up policy invite_only", () => {
  it.scoped("email/start answers a new address as any other, but mails only known ones", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ signup: "invite_only" })
      yield* server.bootstrap("known@example.com")
      const start = (email: string) =>
        Effect.gen(function*() {
          const jar = new CookieJar()
          const reply = yield* request(server.url, "POST", "/v1/auth/email/start", { json: { email }, jar })
          return { status: reply.status, body: reply.body, cookie: jar.get("svc_email_state") !== undefined }
        })
      const known = yield* start("known@example.com")
      const unknown = yield* start("stranger@example.com")
      assert.deepStrictEqual(known, unknown)
      assert.strictEqual(known.status, 202)
      const outbox = yield* server.outbox
      assert.isTrue(outbox.some((message) => message.to === "known@example.com"))
      assert.isFalse(outbox.some((message) => message.to === "stranger@example.com"))
      const verify = yield* request(server.url, "POST", "/v1/auth/email/verify", {
        json: { email: "stranger@example.com", code: "123456" }
      })
      assert.strictEqual(verify.body.code, "invalid_code")
      const providers = yield* request(server.url, "GET", "/v1/auth/providers")
      assert.strictEqual(providers.body.access, "invite_only")
    }))
})
