/**
 * The request edge holds an answer until the commits its request made are on disk: a handler's
 * commit is numbered in its fiber (LastCommit), and the edge waits for the flush that covers it.
 */
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FiberRef } from "effect"
import { edge } from "../../src/http/RequestEdge.js"
import * as Durability from "../../src/persistence/Durability.js"

describe("request edge", () => {
  it.live("an answer leaves once its request's commits are flushed; one that committed nothing at once", () =>
    Effect.gen(function*() {
      const flushes: Array<(error: unknown) => void> = []
      const durability = Durability.make((done) => void flushes.push(done))
      const writes = edge(1024, durability.shape)(
        Effect.as(FiberRef.set(Durability.LastCommit, durability.commit()), HttpServerResponse.text("written"))
      )
      const reads = edge(1024, durability.shape)(Effect.succeed(HttpServerResponse.text("read")))
      const request = (app: HttpApp.Default) =>
        HttpApp.toWebHandler(app)(
          new Request("http://svc.test/", { method: "POST", headers: { "content-length": "0" } })
        )

      let answered = false
      const written = request(writes).then((response) => (answered = true, response.text()))
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      assert.isFalse(answered, "answered before its commit was flushed")
      assert.strictEqual(flushes.length, 1)
      // Another request's answer does not wait for that flush: it committed nothing.
      assert.strictEqual(yield* Effect.promise(() => request(reads).then((response) => response.text())), "read")
      flushes.shift()!(null)
      assert.strictEqual(yield* Effect.promise(() => written), "written")
    }))
})
