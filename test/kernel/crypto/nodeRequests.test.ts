import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted, TestClock } from "effect"
import { AppConfig } from "../../../src/kernel/config/AppConfig.js"
import { nodeHeader, signNodeRequest, verifyNodeRequest } from "../../../src/kernel/crypto/NodeRequests.js"
import { SecretBox } from "../../../src/kernel/crypto/SecretBox.js"
import { testConfig } from "../../support/TestServer.js"

const boxWith = (key: string) =>
  SecretBox.layer.pipe(Layer.provide(Layer.succeed(AppConfig, {
    ...testConfig("/nonexistent-data-dir", 9),
    secretKeys: { kind: "given", keys: [Redacted.make(Buffer.from(key.padEnd(32, "k")))] }
  })))

describe("node requests", () => {
  it.effect("a signed request verifies as its host; any change, another key or a stale time does not", () =>
    Effect.gen(function*() {
      yield* TestClock.adjust(1_800_000_000_000)
      const header = yield* signNodeRequest("GET", "/v1/operations/op-1/events?after=2", "host-b")
      assert.match(header, /^host-b\.\d+\.[A-Za-z0-9_-]+$/)
      assert.deepStrictEqual(
        yield* verifyNodeRequest("get", "/v1/operations/op-1/events?after=2", header),
        Option.some("host-b")
      )
      for (
        const [method, path, value] of [
          ["POST", "/v1/operations/op-1/events?after=2", header],
          ["GET", "/v1/operations/op-1/events?after=3", header],
          ["GET", "/v1/operations/op-1/events?after=2", header.replace("host-b.", "host-c.")],
          ["GET", "/v1/operations/op-1/events?after=2", `${header}.x`],
          ["GET", "/v1/operations/op-1/events?after=2", undefined],
          ["GET", "/v1/operations/op-1/events?after=2", "garbage"]
        ] as const
      ) {
        assert.isTrue(Option.isNone(yield* verifyNodeRequest(method, path, value)), `${method} ${path} ${value}`)
      }
      yield* TestClock.adjust(61_000)
      assert.isTrue(Option.isNone(yield* verifyNodeRequest("GET", "/v1/operations/op-1/events?after=2", header)))
      const other = yield* Effect.provide(signNodeRequest("GET", "/x", "host-b"), boxWith("other"))
      assert.isTrue(Option.isNone(yield* verifyNodeRequest("GET", "/x", other)))
      assert.strictEqual(nodeHeader, "svc-node")
    }).pipe(Effect.provide(boxWith("shared"))))

  it.effect("a forwarded client's address is signed: another address, or none, does not verify", () =>
    Effect.gen(function*() {
      yield* TestClock.adjust(1_800_000_000_000)
      const header = yield* signNodeRequest("POST", "/v1/machines/m/agents/prompt", "host-a", "203.0.113.7")
      assert.deepStrictEqual(
        yield* verifyNodeRequest("POST", "/v1/machines/m/agents/prompt", header, "203.0.113.7"),
        Option.some("host-a")
      )
      for (const client of ["203.0.113.8", undefined]) {
        assert.isTrue(Option.isNone(yield* verifyNodeRequest("POST", "/v1/machines/m/agents/prompt", header, client)))
      }
    }).pipe(Effect.provide(boxWith("shared"))))
})
