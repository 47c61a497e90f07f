/** `SVC_HOST_ID`, `SVC_INTERNAL_URL` and `SVC_HOST_CAPACITY` as `svc serve` reads them (docs/configuration.md). */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeOs from "node:os"
import { failureOf, read } from "./support.js"

describe("host settings", () => {
  it.effect("defaults: the hostname lower-cased, the base URL, no capacity", () =>
    Effect.gen(function*() {
      const defaults = yield* read({ SVC_BASE_URL: "https://svc.example.com" })
      assert.strictEqual(defaults._tag, "Right")
      if (defaults._tag !== "Right") return
      assert.strictEqual(defaults.right.hostId, NodeOs.hostname().toLowerCase())
      assert.strictEqual(defaults.right.internalUrl, "https://svc.example.com")
      assert.isUndefined(defaults.right.hostCapacity)
    }))

  it.effect("set: a host id, an internal URL, a capacity; a wrong one is named", () =>
    Effect.gen(function*() {
      const set = yield* read({
        SVC_HOST_ID: "host-b2",
        SVC_INTERNAL_URL: "http://10.0.0.2:8080/",
        SVC_HOST_CAPACITY: "40"
      })
      assert.isTrue(set._tag === "Right")
      if (set._tag !== "Right") return
      assert.deepStrictEqual(
        [set.right.hostId, set.right.internalUrl, set.right.hostCapacity],
        ["host-b2", "http://10.0.0.2:8080", 40]
      )
      for (const wrong of ["Host", "a.b", "a_b", "", "x".repeat(64)]) {
        assert.include(yield* failureOf({ SVC_HOST_ID: wrong }), "SVC_HOST_ID")
      }
      assert.include(yield* failureOf({ SVC_HOST_CAPACITY: "-1" }), "SVC_HOST_CAPACITY")
      assert.include(yield* failureOf({ SVC_HOST_CAPACITY: "two" }), "SVC_HOST_CAPACITY")
      assert.include(yield* failureOf({ SVC_INTERNAL_URL: "not a url" }), "SVC_INTERNAL_URL")
    }))
})
