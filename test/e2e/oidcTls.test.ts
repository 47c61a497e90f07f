/**
 * OIDC sign-in with an https issuer: the test OP (oidc-provider, in this process) serves a
 * certificate of a CA the test makes, and svc talks to it without `allowInsecureRequests`. Trusting
 * that CA through `SVC_EXTRA_CA_CERTS` (the config field it fills), a person signs in end to end;
 * trusting another CA (or Node's defaults alone), the sign-in does not start: `oidc_unavailable`,
 * and the reason names the failed certificate check.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Agent, fetch as undiciFetch } from "undici"
import { OidcSignIn } from "../../src/identity/OidcSignIn.js"
import { CookieJar, request } from "../support/Http.js"
import { startProviderWith } from "../support/OidcProvider.js"
import { services } from "../support/Services.js"
import { startServer } from "../support/TestServer.js"
import { testCa } from "../support/Tls.js"

/** Follows redirects from `url` as a browser trusting `caPem` would, until svc's callback answers. */
const throughProvider = (svcUrl: string, caPem: string, jar: CookieJar, url: string) =>
  Effect.promise(async () => {
    const dispatcher = new Agent({ connect: { ca: caPem } })
    let next = url
    for (let hop = 0; hop < 12; hop++) {
      const headers: Record<string, string> = jar.cookies.size > 0 ? { cookie: jar.header() } : {}
      const reply = await undiciFetch(next, { headers, redirect: "manual", dispatcher })
      jar.take(reply.headers as unknown as Headers)
      await reply.text()
      const location = reply.headers.get("location")
      if (next.startsWith(`${svcUrl}/v1/auth/callback`)) {
        await dispatcher.close()
        return { status: reply.status, location }
      }
      if (location === null) throw new Error(`no redirect at ${next}: ${reply.status}`)
      next = new URL(location, next).href
    }
    throw new Error("too many redirects")
  })

describe("OIDC over https", () => {
  it.scoped(
    "with the issuer's CA trusted a person signs in; with another CA the sign-in does not start",
    () =>
      Effect.gen(function*() {
        const ca = yield* testCa()
        const other = yield* testCa("another CA")
        const op = yield* startProviderWith(ca.issue("127.0.0.1"))
        assert.match(op.issuer, /^https:\/\/127\.0\.0\.1:\d+$/)
        op.next = { sub: "tls-sub", email: "tls@example.com", email_verified: true }

        const server = yield* startServer({ oidcProviders: [op.setting()], extraCaCerts: [ca.caPem] })
        op.allow(`${server.url}/v1/auth/callback`)
        const jar = new CookieJar()
        const started = yield* request(server.url, "GET", "/v1/auth/login", { jar })
        assert.strictEqual(started.status, 307, started.text)
        assert.isTrue(started.headers.get("location")!.startsWith(`${op.issuer}/`))
        const done = yield* throughProvider(server.url, ca.caPem, jar, started.headers.get("location")!)
        assert.strictEqual(done.location, `${server.url}/`)
        const me = yield* request(server.url, "GET", "/v1/me", { jar })
        assert.strictEqual(me.status, 200)
        assert.strictEqual(me.body.user.email, "tls@example.com")

        for (const extraCaCerts of [[other.caPem], undefined]) {
          const wrong = yield* startServer({ oidcProviders: [op.setting()], extraCaCerts })
          const refused = yield* request(wrong.url, "GET", "/v1/auth/login", { jar: new CookieJar() })
          assert.strictEqual(refused.status, 303)
          assert.strictEqual(refused.headers.get("location"), `${wrong.url}/sign-in?error=oidc_unavailable`)
        }
      }),
    120_000
  )

  it.scoped("the reason of a refused certificate says so", () =>
    Effect.gen(function*() {
      const ca = yield* testCa()
      const other = yield* testCa("another CA")
      const op = yield* startProviderWith(ca.issue("127.0.0.1"))
      const context = yield* services({ oidcProviders: [op.setting()], extraCaCerts: [other.caPem] })
      const failed = yield* Effect.flip(OidcSignIn.pipe(
        Effect.flatMap((oidc) => oidc.begin(undefined, undefined, null, "127.0.0.1")),
        Effect.provide(context)
      ))
      assert.strictEqual(failed._tag, "SignInFailed")
      assert.strictEqual(failed._tag === "SignInFailed" && failed.code, "oidc_unavailable")
      assert.match(String(failed._tag === "SignInFailed" && failed.reason), /discovery failed: .*certificate/)
    }), 120_000)
})
