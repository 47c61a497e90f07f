/** `SVC_PORTS_URL` and `SVC_TRUSTED_PROXIES` as `svc serve` reads them: malformed values named. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { cidrMatcher } from "../../../src/kernel/domain/Cidr.js"
import { failureOf, read } from "./support.js"

describe("proxy settings", () => {
  it.effect("SVC_PORTS_URL: unset by default, a template with {port} and {machine} in the host, else named", () =>
    Effect.gen(function*() {
      const defaults = yield* read({})
      assert.isTrue(defaults._tag === "Right" && defaults.right.portsUrl === undefined)
      const set = yield* read({ SVC_PORTS_URL: "https://{port}-{machine}.ports.example.com/" })
      assert.strictEqual(set._tag === "Right" && set.right.portsUrl, "https://{port}-{machine}.ports.example.com")
      assert.include(yield* failureOf({ SVC_PORTS_URL: "https://ports.example.com" }), "SVC_PORTS_URL")
      assert.include(yield* failureOf({ SVC_PORTS_URL: "https://{port}.example.com" }), "{machine}")
    }))

  it.effect("SVC_TRUSTED_PROXIES: a CIDR list, empty by default, else named", () =>
    Effect.gen(function*() {
      const defaults = yield* read({})
      assert.deepStrictEqual(defaults._tag === "Right" && defaults.right.trustedProxies, [])
      const set = yield* read({ SVC_TRUSTED_PROXIES: "127.0.0.1/32, 10.0.0.0/8,::1" })
      assert.deepStrictEqual(set._tag === "Right" && set.right.trustedProxies, ["127.0.0.1/32", "10.0.0.0/8", "::1"])
      assert.include(yield* failureOf({ SVC_TRUSTED_PROXIES: "10.0.0.0/33" }), "SVC_TRUSTED_PROXIES")
      assert.include(yield* failureOf({ SVC_TRUSTED_PROXIES: "localhost" }), "SVC_TRUSTED_PROXIES")
    }))

  it("a CIDR list matches its addresses, IPv4 seen as IPv6 included", () => {
    const trusted = cidrMatcher(["127.0.0.1/32", "10.0.0.0/8", "fd00::/8"])
    assert.isTrue(trusted("127.0.0.1"))
    assert.isTrue(trusted("::ffff:10.1.2.3"))
    assert.isTrue(trusted("fd12::1"))
    assert.isFalse(trusted("127.0.0.2"))
    assert.isFalse(trusted("::1"))
    assert.isFalse(trusted("garbage"))
    assert.isFalse(trusted(undefined))
    assert.isFalse(cidrMatcher([])("127.0.0.1"))
  })
})
