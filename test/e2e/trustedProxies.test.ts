/**
 * `SVC_TRUSTED_PROXIES`: behind a reverse proxy every client reaches svc from the proxy's address,
 * so without it thirty sign-in starts lock everyone out of sign-in. From a trusted peer the
 * rightmost untrusted `X-Forwarded-For` address is the client; from any other peer the header is
 * ignored. Judged by svc's answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "../support/Http.js"
import { codeFrom, latestMailTo } from "../support/SignIn.js"
import { startServer, type TestServer } from "../support/TestServer.js"

/** 31 sign-in starts, each for its own address, as `headersOf(i)` says they were forwarded. */
const thirtyOneStarts = (url: string, headersOf: (i: number) => Record<string, string>) =>
  Effect.forEach(
    Array.from({ length: 31 }, (_, i) => i),
    (i) =>
      Effect.map(
        request(url, "POST", "/v1/auth/email/start", {
          json: { email: `user${i}@example.com` },
          headers: headersOf(i)
        }),
        (reply) => reply.status
      )
  )

/** Signs in by e-mail code with `headers` on both calls: the Set-Cookie lines by cookie name. */
const signInCookies = (server: TestServer, email: string, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const started = yield* request(server.url, "POST", "/v1/auth/email/start", { json: { email }, headers })
    assert.strictEqual(started.status, 202, started.text)
    const code = codeFrom((yield* latestMailTo(server, email)).text)
    const verified = yield* request(server.url, "POST", "/v1/auth/email/verify", { json: { email, code }, headers })
    assert.strictEqual(verified.status, 200, verified.text)
    const lines = [...started.headers.getSetCookie(), ...verified.headers.getSetCookie()]
    return Object.fromEntries(lines.map((line) => [line.split("=", 1)[0]!, line]))
  })

const secure = (line: string | undefined) => /;\s*Secure(;|$)/i.test(line ?? "")

describe("trusted proxies", () => {
  it.scopedLive(
    "over https by a trusted proxy the session and CSRF cookies are Secure; an untrusted peer's header changes nothing",
    () =>
      Effect.gen(function*() {
        const proxied = yield* startServer({ trustedProxies: ["127.0.0.1/32"] })
        assert.match(proxied.config.baseUrl, /^http:/)
        const overHttps = yield* signInCookies(proxied, "ada@example.com", {
          "x-forwarded-proto": "https",
          "x-forwarded-for": "203.0.113.5"
        })
        for (const name of ["svc_session", "svc_csrf", "svc_email_state"]) {
          assert.isTrue(secure(overHttps[name]), `${name}: ${overHttps[name]}`)
        }
        const overHttp = yield* signInCookies(proxied, "bob@example.com", { "x-forwarded-proto": "http" })
        assert.isFalse(secure(overHttp["svc_session"]), overHttp["svc_session"])
        assert.isFalse(secure(overHttp["svc_csrf"]), overHttp["svc_csrf"])

        const direct = yield* startServer({ trustedProxies: ["10.0.0.0/8"] })
        const claimed = yield* signInCookies(direct, "eve@example.com", { "x-forwarded-proto": "https" })
        assert.isFalse(secure(claimed["svc_session"]), claimed["svc_session"])
        assert.isFalse(secure(claimed["svc_csrf"]), claimed["svc_csrf"])
      }),
    120_000
  )

  it.scopedLive(
    "with an https base URL the session, CSRF and sign-in cookies are Secure, whatever a proxy says",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ baseUrl: "https://svc.example.com", trustedProxies: ["127.0.0.1/32"] })
        for (const headers of [{}, { "x-forwarded-proto": "http" }]) {
          const cookies = yield* signInCookies(server, `https${Object.keys(headers).length}@example.com`, headers)
          for (const name of ["svc_session", "svc_csrf", "svc_email_state"]) {
            assert.isTrue(secure(cookies[name]), `${name}: ${cookies[name]}`)
          }
        }
      }),
    120_000
  )

  it.scopedLive(
    "behind a trusted proxy, thirty sign-in starts from different clients do not lock each other out",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ trustedProxies: ["127.0.0.1/32"] })
        // The client wrote an address of its own on the left; the proxy appended the one it saw.
        const statuses = yield* thirtyOneStarts(server.url, (i) => ({
          "x-forwarded-for": `198.51.100.7, 203.0.113.${i + 1}`
        }))
        assert.deepStrictEqual(statuses.filter((status) => status !== 202), [], "no client hit another's limit")
        // One client past its own limit is still limited, whatever it writes on the left.
        const one = yield* thirtyOneStarts(server.url, (i) => ({ "x-forwarded-for": `10.9.9.${i}, 192.0.2.1` }))
        assert.strictEqual(one.at(-1), 429)
      }),
    120_000
  )

  it.scopedLive(
    "from a peer that is not trusted, X-Forwarded-For and -Proto are ignored",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ trustedProxies: ["10.0.0.0/8"] })
        const statuses = yield* thirtyOneStarts(server.url, (i) => ({ "x-forwarded-for": `203.0.113.${i + 1}` }))
        assert.strictEqual(statuses.at(-1), 429, "the peer's own address is limited")
        const proto = yield* request(server.url, "POST", "/v1/auth/email/start", {
          json: { email: "late@example.com" },
          headers: { "x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.200" }
        })
        assert.strictEqual(proto.status, 429)
      }),
    120_000
  )
})
