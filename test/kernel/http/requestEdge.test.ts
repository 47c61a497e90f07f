/**
 * The request edge holds an answer until the commits its request made are on disk: a handler's
 * commit is numbered in its fiber (LastCommit), and the edge waits for the flush that covers it.
 * It gives every request a correlation id: on its answer, in its fiber, on its log lines.
 */
import { HttpApp, HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, FiberRef, HashMap, Layer, Logger, Option } from "effect"
import { createServer } from "node:http"
import { CORRELATION_HEADER, CurrentCorrelationId, edge } from "../../../src/kernel/http/RequestEdge.js"
import * as Durability from "../../../src/kernel/sql/Durability.js"
import { request } from "../../support/Http.js"

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
      // The write is waiting once its flush has been asked for (the idle signal, not a pause).
      while (flushes.length === 0) yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      assert.strictEqual(flushes.length, 1)
      // Another request's answer does not wait for that flush: it committed nothing. Its whole
      // round trip gives the write every chance to be answered too, which it must not be.
      assert.strictEqual(yield* Effect.promise(() => request(reads).then((response) => response.text())), "read")
      assert.isFalse(answered, "answered before its commit was flushed")
      flushes.shift()!(null)
      assert.strictEqual(yield* Effect.promise(() => written), "written")
    }))
})

/** A route that logs a line and answers what its fiber holds as the correlation id. */
const app = HttpRouter.empty.pipe(
  HttpRouter.get(
    "/echo",
    Effect.gen(function*() {
      yield* Effect.logInfo("echo")
      return yield* HttpServerResponse.json({ correlation_id: yield* FiberRef.get(CurrentCorrelationId) })
    })
  )
)

/** This app commits nothing, so no answer waits for a flush. */
const nothingToFlush: Durability.DurabilityShape = {
  syncThrough: () => Effect.void,
  syncOwn: Effect.void,
  committed: () => 0
}

/** The app behind `edge` on a loopback port; `logged` gathers the correlation id of every log line. */
const serveEdge = Effect.gen(function*() {
  const logged: Array<Option.Option<unknown>> = []
  const logger = Logger.make(({ annotations }) => void logged.push(HashMap.get(annotations, "correlation_id")))
  const context = yield* Layer.build(
    HttpServer.serve(Effect.orDie(app), edge(1024, nothingToFlush)).pipe(
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
      Layer.provide(Logger.replace(Logger.defaultLogger, logger))
    )
  )
  const address = Context.get(context, HttpServer.HttpServer).address as HttpServer.TcpAddress
  return { url: `http://127.0.0.1:${address.port}`, logged }
})

describe("request edge: correlation ids", () => {
  it.scopedLive("a request's correlation id is its answer's header, its fiber's and its log lines'", () =>
    Effect.gen(function*() {
      const server = yield* serveEdge
      const given = yield* request(server.url, "GET", "/echo", { headers: { [CORRELATION_HEADER]: "abc-123" } })
      assert.strictEqual(given.headers.get(CORRELATION_HEADER), "abc-123")
      assert.strictEqual(given.body.correlation_id, "abc-123")
      const made = yield* request(server.url, "GET", "/echo")
      const id = made.headers.get(CORRELATION_HEADER)!
      assert.match(id, /^[0-9a-f-]{36}$/)
      assert.strictEqual(made.body.correlation_id, id)
      // Each request's route line and its access line, the access line once the answer is handed over
      // (after the client has it: waited for, however slow the host).
      while (server.logged.length < 4) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
      assert.deepStrictEqual(
        server.logged.map((entry) => Option.getOrElse(entry, () => "none")).sort(),
        ["abc-123", "abc-123", id, id].sort()
      )
    }))

  it.scopedLive("a request's correlation id does not outlive it: the next request on the connection has its own", () =>
    Effect.gen(function*() {
      const server = yield* serveEdge
      const first = yield* request(server.url, "GET", "/echo")
      const second = yield* request(server.url, "GET", "/echo")
      assert.notStrictEqual(first.body.correlation_id, second.body.correlation_id)
      assert.strictEqual(second.headers.get(CORRELATION_HEADER), second.body.correlation_id)
    }))
})
