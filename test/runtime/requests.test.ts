/** Operation requests are decoded once, by kind; what does not decode never reaches the driver. */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { decodeRequest } from "../../src/runtime/Requests.js"

describe("operation requests", () => {
  it("decodes each kind with its defaults and narrows the request by kind", () => {
    const exec = decodeRequest({ kind: "exec", request: JSON.stringify({ command: ["echo", "hi"] }) })
    assert.isTrue(Either.isRight(exec))
    if (Either.isRight(exec) && exec.right.kind === "exec") {
      assert.deepStrictEqual(exec.right.request.command, ["echo", "hi"])
      assert.strictEqual(exec.right.request.timeout_seconds, 300)
    }
    const stop = decodeRequest({ kind: "stop", request: "{}" })
    assert.deepStrictEqual(Either.getOrThrow(stop), { kind: "stop", request: { force: false, stop_reason: "api" } })
    const port = decodeRequest({ kind: "expose_port", request: JSON.stringify({ port: 8080 }) })
    assert.deepStrictEqual(Either.getOrThrow(port), { kind: "expose_port", request: { port: 8080, public: false } })
  })

  it("refuses a request that is not what its kind carries, naming the kind", () => {
    const wrong = decodeRequest({ kind: "write_file", request: JSON.stringify({ path: 7 }) })
    assert.isTrue(Either.isLeft(wrong))
    if (Either.isLeft(wrong)) assert.match(wrong.left, /^the write_file request: /)
    const badPort = decodeRequest({ kind: "unexpose_port", request: JSON.stringify({ port: 70000 }) })
    assert.isTrue(Either.isLeft(badPort))
    const notJson = decodeRequest({ kind: "start", request: "{" })
    assert.deepStrictEqual(notJson, Either.left("the start request is not JSON"))
  })
})
