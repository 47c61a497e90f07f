/**
 * The SSRF guard (src/kernel/http/Outbound.ts): a table of URLs checked when a webhook is saved,
 * the connect-time check on the resolved address (DNS rebinding), redirects, the timeout and the
 * 1 KiB read, against real local servers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as NodeHttp from "node:http"
import type * as NodeNet from "node:net"
import { checkUrl, checkUrlResolved, make } from "../../../src/kernel/http/Outbound.js"

const strict = { allowPrivate: false }

/** [url, accepted under the strict policy] */
const table: ReadonlyArray<readonly [string, boolean]> = [
  ["https://example.com/hook", true],
  ["https://example.com:443/hook", true],
  ["https://hooks.example.org/a?b=c", true],
  ["https://93.184.216.34/", true],
  ["https://8.8.8.8/", true],
  ["https://[2606:4700:4700::1111]/", true],
  ["https://[2a00:1450:4001:80b::200e]/", true],
  ["https://[::ffff:8.8.8.8]/", true],
  ["https://[2002:0808:0808::1]/", true],
  ["http://example.com/", false],
  ["ftp://example.com/", false],
  ["https://example.com:8443/", false],
  ["https://example.com:80/", false],
  ["https://user:pass@example.com/", false],
  ["https://user@example.com/", false],
  ["https://example.com/#fragment", false],
  ["https://example.com/#", false],
  ["not a url", false],
  ["https://localhost/", false],
  ["https://foo.localhost/", false],
  ["https://metadata.google.internal/", false],
  ["https://printer.local/", false],
  ["https://intranet/", false],
  ["https://127.0.0.1/", false],
  ["https://127.1/", false],
  ["https://2130706433/", false],
  ["https://0x7f000001/", false],
  ["https://0x7f.0.0.1/", false],
  ["https://017700000001/", false],
  ["https://0177.0.0.1/", false],
  ["https://0/", false],
  ["https://0.0.0.0/", false],
  ["https://10.0.0.1/", false],
  ["https://012.0.0.1/", false],
  ["https://167772161/", false],
  ["https://172.16.0.1/", false],
  ["https://172.31.255.255/", false],
  ["https://192.168.1.1/", false],
  ["https://0xc0a80101/", false],
  ["https://169.254.169.254/latest/meta-data/", false],
  ["https://2852039166/", false],
  ["https://100.64.0.1/", false],
  ["https://100.100.100.200/", false],
  ["https://224.0.0.1/", false],
  ["https://239.255.255.250/", false],
  ["https://255.255.255.255/", false],
  ["https://198.18.0.1/", false],
  ["https://192.0.2.1/", false],
  ["https://[::1]/", false],
  ["https://[::]/", false],
  ["https://[0:0:0:0:0:0:0:1]/", false],
  ["https://[::ffff:127.0.0.1]/", false],
  ["https://[::ffff:7f00:1]/", false],
  ["https://[::ffff:a9fe:a9fe]/", false],
  ["https://[::ffff:10.0.0.1]/", false],
  ["https://[::127.0.0.1]/", false],
  ["https://[64:ff9b::127.0.0.1]/", false],
  ["https://[64:ff9b::a9fe:a9fe]/", false],
  ["https://[2002:7f00:1::]/", false],
  ["https://[2002:c0a8:101::1]/", false],
  ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", false],
  ["https://[fc00::1]/", false],
  ["https://[fd00:ec2::254]/", false],
  ["https://[fe80::1]/", false],
  ["https://[fec0::1]/", false],
  ["https://[ff02::1]/", false],
  ["https://[2001:db8::1]/", false],
  ["https://[100::1]/", false]
]

describe("the SSRF guard", () => {
  it("checks a table of URLs when they are saved", () => {
    assert.isAtLeast(table.length, 40)
    const wrong = table.filter(([url, accepted]) => (typeof checkUrl(url, strict) === "string") !== accepted)
    assert.deepStrictEqual(wrong, [])
  })

  it("allows http, any port and private hosts with SVC_WEBHOOK_ALLOW_PRIVATE, but never credentials", () => {
    const relaxed = { allowPrivate: true }
    assert.strictEqual(checkUrl("http://127.0.0.1:8080/hook", relaxed), "http://127.0.0.1:8080/hook")
    assert.strictEqual(typeof checkUrl("https://192.168.1.10:8443/", relaxed), "string")
    assert.notStrictEqual(typeof checkUrl("http://u:p@127.0.0.1/", relaxed), "string")
    assert.notStrictEqual(typeof checkUrl("file:///etc/passwd", relaxed), "string")
  })

  it.effect("refuses at save time a name that resolves to a private address", () =>
    Effect.gen(function*() {
      const resolve = (host: string) =>
        Promise.resolve(
          host === "evil.example" ? [{ address: "10.1.2.3", family: 4 }] : [{ address: "8.8.8.8", family: 4 }]
        )
      const evil = yield* Effect.either(checkUrlResolved("https://evil.example/", strict, resolve))
      assert.isTrue(Either.isLeft(evil))
      const good = yield* Effect.either(checkUrlResolved("https://good.example/", strict, resolve))
      assert.isTrue(Either.isRight(good))
    }))

  it.effect("checks the address again at connect time and connects to the checked one", () =>
    Effect.gen(function*() {
      // A rebinding name: public when saved, loopback when connecting.
      const outbound = make({
        allowPrivate: false,
        resolve: () => Promise.resolve([{ address: "127.0.0.1", family: 4 }])
      })
      const failed = yield* Effect.flip(outbound.post("https://rebind.example/", {}, "{}"))
      assert.match(failed.message, /refused to connect to rebind\.example \(127\.0\.0\.1/)
      const mapped = make({
        allowPrivate: false,
        resolve: () => Promise.resolve([{ address: "::ffff:169.254.169.254", family: 6 }])
      })
      assert.match((yield* Effect.flip(mapped.post("https://meta.example/", {}, "{}"))).message, /IPv4-mapped/)
      outbound.close()
      mapped.close()
    }))

  it.live("never follows redirects, reads at most 1 KiB and gives up after the timeout", () =>
    Effect.gen(function*() {
      let followed = 0
      const server = NodeHttp.createServer((request, response) => {
        if (request.url === "/redirect") {
          response.writeHead(302, { location: "/target" }).end()
        } else if (request.url === "/target") {
          followed++
          response.end("followed")
        } else if (request.url === "/big") {
          response.end("x".repeat(100_000))
        } else {
          // /hang: never answers
        }
      })
      yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve)))
      const port = (server.address() as NodeNet.AddressInfo).port
      const outbound = make({ allowPrivate: true, timeoutMillis: 300 })
      const redirect = yield* outbound.post(`http://127.0.0.1:${port}/redirect`, {}, "{}")
      assert.strictEqual(redirect.status, 302)
      assert.strictEqual(followed, 0)
      const big = yield* outbound.post(`http://127.0.0.1:${port}/big`, {}, "{}")
      assert.strictEqual(big.body.length, 1024)
      // Ended by its own timeout (the message names it), not by the server.
      const hung = yield* Effect.flip(outbound.post(`http://127.0.0.1:${port}/hang`, {}, "{}"))
      assert.strictEqual(hung.message, "no answer within 0.3 s")
      outbound.close()
      server.closeAllConnections()
      server.close()
    }))
})
