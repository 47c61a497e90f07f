/**
 * `SVC_TRUSTED_PROXIES`: behind a reverse proxy every client reaches svc from the proxy's address,
 * so without it thirty sign-in starts lock everyone out of sign-in. From a trusted peer the
 * rightmost untrusted `X-Forwarded-For` address is the client; from any other peer the header is
 * ignored. Judged by svc's answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "../support/Http.js"
import { startServer } from "../support/TestServer.js"

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

describe("trusted proxies", () => {
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
