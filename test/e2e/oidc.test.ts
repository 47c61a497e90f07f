/**
 * OIDC sign-in end to end against a real OpenID provider (oidc-provider on loopback, in this
 * process): PKCE, state and nonce on the way out, every `?error=` code on the way back, the state's
 * single use and ten-minute life (TestClock), the browser binding, sign-up policy, and linking a
 * provider to a signed-in user (`identity_in_use` when it is someone else's).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import type { AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import { CookieJar, request } from "../support/Http.js"
import { startProvider, type TestProvider } from "../support/OidcProvider.js"
import { signIn } from "../support/SignIn.js"
import { startServer, type TestServer } from "../support/TestServer.js"

const setup = (overrides: Partial<AppConfigShape> = {}) =>
  Effect.gen(function*() {
    const op = yield* startProvider
    const server = yield* startServer({ oidcProviders: [op.setting()], ...overrides })
    op.allow(`${server.url}/v1/auth/callback`)
    return { op, server }
  })

/** Follows redirects from `url` in `jar`'s browser until svc's callback; answers the callback's reply. */
const throughProvider = (server: TestServer, jar: CookieJar, url: string) =>
  Effect.gen(function*() {
    let next = url
    for (let hop = 0; hop < 12; hop++) {
      const target = new URL(next)
      const reply = yield* request(target.origin, "GET", target.pathname + target.search, { jar })
      if (target.origin === server.url && target.pathname === "/v1/auth/callback") return reply
      const location = reply.headers.get("location")
      if (location === null) throw new Error(`no redirect at ${next}: ${reply.status} ${reply.text.slice(0, 200)}`)
      next = new URL(location, next).href
    }
    throw new Error("too many redirects")
  })

/** Starts a login in `jar`'s browser: the 307 to the provider. */
const login = (server: TestServer, jar: CookieJar, query = "") =>
  request(server.url, "GET", `/v1/auth/login${query}`, { jar })

const signInThroughProvider = (server: TestServer, jar: CookieJar, query = "") =>
  Effect.gen(function*() {
    const started = yield* login(server, jar, query)
    assert.strictEqual(started.status, 307, started.text)
    return yield* throughProvider(server, jar, started.headers.get("location")!)
  })

const errorOf = (server: TestServer, location: string | null) => {
  assert.isNotNull(location)
  assert.isTrue(location!.startsWith(`${server.url}/sign-in?error=`), location!)
  return new URL(location!).searchParams.get("error")
}

const me = (server: TestServer, jar: CookieJar) => request(server.url, "GET", "/v1/me", { jar })

const ada = (op: TestProvider) => (op.next = { sub: "ada-sub", email: "ada@example.com", email_verified: true })

describe("OIDC sign-in", () => {
  it.scoped("lists the provider and signs in with PKCE, state and nonce, creating the user once", () =>
    Effect.gen(function*() {
      const { op, server } = yield* setup()
      const providers = yield* request(server.url, "GET", "/v1/auth/providers")
      assert.deepStrictEqual(providers.body.providers[0], {
        name: "testop",
        display_name: "Test Provider",
        kind: "oidc",
        default: true
      })
      ada(op)
      const jar = new CookieJar()
      const started = yield* login(server, jar, "?return_to=%2Fmachines%3Fx%3D1")
      assert.strictEqual(started.status, 307)
      const authorize = new URL(started.headers.get("location")!)
      assert.strictEqual(authorize.origin, op.issuer)
      assert.strictEqual(authorize.searchParams.get("code_challenge_method"), "S256")
      assert.strictEqual(authorize.searchParams.get("scope"), "openid email profile")
      for (const name of ["state", "nonce", "code_challenge"]) assert.isString(authorize.searchParams.get(name))
      assert.isString(jar.get("svc_oidc"))
      const done = yield* throughProvider(server, jar, authorize.href)
      assert.strictEqual(done.status, 303)
      assert.strictEqual(done.headers.get("location"), `${server.url}/machines?x=1`)
      assert.isUndefined(jar.get("svc_oidc"))
      const first = yield* me(server, jar)
      assert.strictEqual(first.body.user.email, "ada@example.com")
      assert.strictEqual(first.body.organizations[0].role, "owner")

      const again = new CookieJar()
      assert.strictEqual((yield* signInThroughProvider(server, again)).headers.get("location"), `${server.url}/`)
      assert.strictEqual((yield* me(server, again)).body.user.id, first.body.user.id)
    }))

  it.scoped("the person refusing is access_denied; another provider error is oidc_failed", () =>
    Effect.gen(function*() {
      const { op, server } = yield* setup()
      op.next = "refuse"
      const refused = yield* signInThroughProvider(server, new CookieJar())
      assert.strictEqual(errorOf(server, refused.headers.get("location")), "access_denied")

      const jar = new CookieJar()
      const started = yield* login(server, jar)
      const state = new URL(started.headers.get("location")!).searchParams.get("state")!
      const failed = yield* request(server.url, "GET", `/v1/auth/callback?error=server_error&state=${state}`, { jar })
      assert.strictEqual(errorOf(server, failed.headers.get("location")), "oidc_failed")
    }))

  it.scoped("an unknown provider is unsupported_provider; an unreachable one oidc_unavailable", () =>
    Effect.gen(function*() {
      const { server } = yield* setup()
      const unknown = yield* login(server, new CookieJar(), "?provider=nope")
      assert.strictEqual(unknown.status, 303)
      assert.strictEqual(errorOf(server, unknown.headers.get("location")), "unsupported_provider")

      const down = yield* startServer({
        oidcProviders: [{
          name: "down",
          display_name: "Down",
          issuer: "http://127.0.0.1:9/",
          client_id: "x",
          client_secret: "y",
          default: false
        }]
      })
      const unreachable = yield* login(down, new CookieJar())
      assert.strictEqual(errorOf(down, unreachable.headers.get("location")), "oidc_unavailable")
    }))

  it.scoped("logins are rate limited per client with Retry-After", () =>
    Effect.gen(function*() {
      const { server } = yield* setup()
      for (let i = 0; i < 60; i++) {
        assert.strictEqual((yield* login(server, new CookieJar(), "?provider=x")).status, 303)
      }
      const limited = yield* login(server, new CookieJar())
      assert.strictEqual(limited.status, 429)
      assert.strictEqual(limited.body.code, "rate_limited")
      assert.isTrue(Number(limited.headers.get("retry-after")) > 0)
      yield* TestClock.adjust("10 minutes")
      assert.strictEqual((yield* login(server, new CookieJar())).status, 307)
    }))

  it.scoped("a state works once, in the browser that started, within ten minutes", () =>
    Effect.gen(function*() {
      const { op, server } = yield* setup()
      ada(op)
      const missing = yield* request(server.url, "GET", "/v1/auth/callback?code=x")
      assert.strictEqual(errorOf(server, missing.headers.get("location")), "session_expired")
      const forged = yield* request(server.url, "GET", "/v1/auth/callback?code=x&state=forged")
      assert.strictEqual(errorOf(server, forged.headers.get("location")), "session_expired")

      // Another browser (an attacker's link) cannot finish someone's sign-in.
      const jar = new CookieJar()
      const started = yield* login(server, jar)
      const stranger = new CookieJar()
      stranger.cookies.set("svc_oidc", "not-the-browser")
      const elsewhere = yield* throughProvider(server, stranger, started.headers.get("location")!)
      assert.strictEqual(errorOf(server, elsewhere.headers.get("location")), "session_expired")

      // Replaying a finished callback fails.
      const ok = new CookieJar()
      const first = yield* login(server, ok)
      let callbackUrl = ""
      {
        let next = first.headers.get("location")!
        for (let hop = 0; hop < 12 && !next.startsWith(`${server.url}/v1/auth/callback`); hop++) {
          const target = new URL(next)
          const reply = yield* request(target.origin, "GET", target.pathname + target.search, { jar: ok })
          next = new URL(reply.headers.get("location")!, next).href
        }
        callbackUrl = next
      }
      const path = callbackUrl.slice(server.url.length)
      const cookie = ok.get("svc_oidc")!
      assert.strictEqual(
        (yield* request(server.url, "GET", path, { jar: ok })).headers.get("location"),
        `${server.url}/`
      )
      ok.cookies.set("svc_oidc", cookie)
      const replay = yield* request(server.url, "GET", path, { jar: ok })
      assert.strictEqual(errorOf(server, replay.headers.get("location")), "session_expired")

      // Ten minutes after the login, the callback is too late.
      const slow = new CookieJar()
      const late = yield* login(server, slow)
      yield* TestClock.adjust("601 seconds")
      const expired = yield* throughProvider(server, slow, late.headers.get("location")!)
      assert.strictEqual(errorOf(server, expired.headers.get("location")), "session_expired")
    }))

  it.scoped("invite_only refuses a new address, lets a known one in, and never trusts an unverified address", () =>
    Effect.gen(function*() {
      const { op, server } = yield* setup({ signup: "invite_only" })
      op.next = { sub: "new-sub", email: "new@example.com", email_verified: true }
      const refused = yield* signInThroughProvider(server, new CookieJar())
      assert.strictEqual(errorOf(server, refused.headers.get("location")), "access_denied")

      const known = yield* server.bootstrap("known@example.com")
      op.next = { sub: "other-sub", email: "known@example.com", email_verified: false }
      const unverified = yield* signInThroughProvider(server, new CookieJar())
      assert.strictEqual(errorOf(server, unverified.headers.get("location")), "access_denied")

      op.next = { sub: "known-sub", email: "Known@Example.com", email_verified: true }
      const jar = new CookieJar()
      assert.strictEqual((yield* signInThroughProvider(server, jar)).headers.get("location"), `${server.url}/`)
      assert.strictEqual((yield* me(server, jar)).body.user.id, known.user_id)
    }))

  it.scoped("signed in, a login links the provider; another user's link is identity_in_use", () =>
    Effect.gen(function*() {
      const { op, server } = yield* setup()
      const browser = yield* signIn(server, "grace@example.com")
      op.next = { sub: "grace-at-op", email: "someone-else@example.com", email_verified: true }
      const linked = yield* signInThroughProvider(server, browser.jar, "?return_to=%2Fsettings")
      assert.strictEqual(linked.headers.get("location"), `${server.url}/settings`)

      // The provider now signs in as grace, whatever address it gives.
      const fresh = new CookieJar()
      yield* signInThroughProvider(server, fresh)
      assert.strictEqual((yield* me(server, fresh)).body.user.email, "grace@example.com")

      const other = yield* signIn(server, "heidi@example.com")
      const taken = yield* signInThroughProvider(server, other.jar)
      assert.strictEqual(errorOf(server, taken.headers.get("location")), "identity_in_use")
      assert.strictEqual((yield* me(server, other.jar)).body.user.email, "heidi@example.com")
    }))
})
