/**
 * The client's retry rule (api.md, "Idempotency and operations", rule 6) against a local HTTP server
 * that answers what each test scripts: waits are on the TestClock, requests are real.
 */
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, TestClock } from "effect"
import * as NodeHttp from "node:http"
import type * as NodeNet from "node:net"
import { makeClient } from "../../src/client/Client.js"
import {
  defaultRetryPolicy,
  retryAfterMillis,
  type RetryNotice,
  withIdempotencyKey,
  withRetries
} from "../../src/client/Retry.js"

interface Seen {
  readonly method: string
  readonly url: string
  readonly key: string | undefined
}

type Answer =
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body?: unknown }
  | "drop"

/** A server that answers the scripted answers in order (the last one repeats) and records what it saw. */
const scriptedServer = (answers: ReadonlyArray<Answer>) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; seen: Array<Seen>; next: (count: number) => Promise<void>; server: NodeHttp.Server }>(
      (resume) => {
        const seen: Array<Seen> = []
        const waiters: Array<{ count: number; resolve: () => void }> = []
        const server = NodeHttp.createServer((request, response) => {
          request.resume()
          request.on("end", () => {
            const answer = answers[Math.min(seen.length, answers.length - 1)]!
            seen.push({
              method: request.method!,
              url: request.url!,
              key: request.headers["idempotency-key"] as string | undefined
            })
            for (const waiter of waiters.filter((w) => seen.length >= w.count)) waiter.resolve()
            if (answer === "drop") return request.socket.destroy()
            response.writeHead(answer.status, { "content-type": "application/json", ...answer.headers })
            response.end(JSON.stringify(answer.body ?? {}))
          })
        })
        server.listen(0, "127.0.0.1", () =>
          resume(Effect.succeed({
            url: `http://127.0.0.1:${(server.address() as NodeNet.AddressInfo).port}`,
            seen,
            server,
            next: (count) =>
              seen.length >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve }))
          })))
      }
    ),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  )

/** A few milliseconds of real time, between two looks at an idle signal. */
const glance = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))

/**
 * The idle signal of a fiber on the TestClock: waits (in real time) until it sleeps on the clock or has
 * ended. An adjust takes the sleeps it wakes off the list, so a sleep on it afterwards is a new one.
 */
const pausedOrDone = (fiber: Fiber.RuntimeFiber<unknown, unknown>) =>
  Effect.gen(function*() {
    while (Chunk.isEmpty(yield* TestClock.sleeps()) && fiber.unsafePoll() === null) yield* glance
  })

/**
 * The idle signal: waits (in real time) until a fiber sleeps on the TestClock until `at` ms, i.e. the
 * client has done all it would do before then; "nothing sent yet" needs no pause after it.
 */
const asleepUntil = (at: number) =>
  Effect.gen(function*() {
    while (!Chunk.contains(yield* TestClock.sleeps(), at)) yield* glance
  })

const send = (url: string, method: "GET" | "POST" | "DELETE") =>
  Effect.flatMap(
    HttpClient.HttpClient,
    (client) => withIdempotencyKey(withRetries(defaultRetryPolicy)(client)).execute(HttpClientRequest.make(method)(url))
  ).pipe(
    Effect.provide(FetchHttpClient.layer)
  )

describe("client retries", () => {
  it.scoped("a read waits the Retry-After of a 503, and is retried on 408, 429, 502 and 504", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([
        { status: 503, headers: { "retry-after": "3" } },
        { status: 408 },
        { status: 429, headers: { "retry-after": "1" } },
        { status: 502 },
        { status: 504 },
        { status: 200 }
      ])
      const call = yield* Effect.fork(send(server.url + "/v1/me", "GET"))
      yield* Effect.promise(() => server.next(1))
      yield* asleepUntil(3000)
      yield* TestClock.adjust("2999 millis")
      assert.strictEqual(server.seen.length, 1, "not before Retry-After")
      yield* TestClock.adjust("1 millis")
      yield* Effect.promise(() => server.next(2))
      // 408 and 502, 504 back off (at most 1.2 x 0.5, 1, ... s); 429 waits its second.
      for (let count = 3; count <= 6; count++) {
        yield* TestClock.adjust("10 seconds")
        yield* Effect.promise(() => server.next(count))
      }
      const response = yield* Fiber.join(call)
      assert.strictEqual(response.status, 200)
      assert.strictEqual(server.seen.length, 6)
      assert.isTrue(server.seen.every((s) => s.key === undefined), "reads carry no idempotency key")
    }))

  it.scoped("a mutation is retried on 429 and 503 only, every attempt with the same idempotency key", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([
        { status: 429, headers: { "retry-after": "2" } },
        { status: 503 },
        { status: 502 },
        { status: 200 }
      ])
      const call = yield* Effect.fork(send(server.url + "/v1/machines", "POST"))
      yield* Effect.promise(() => server.next(1))
      yield* TestClock.adjust("2 seconds")
      yield* Effect.promise(() => server.next(2))
      yield* TestClock.adjust("10 seconds")
      const response = yield* Fiber.join(call)
      // The 502 is not retried for a mutation: the server may have acted.
      assert.strictEqual(response.status, 502)
      assert.strictEqual(server.seen.length, 3)
      const keys = new Set(server.seen.map((s) => s.key))
      assert.strictEqual(keys.size, 1)
      assert.match([...keys][0]!, /^[0-9a-f-]{36}$/)
    }))

  it.scoped("a dropped connection is retried for a read, not for a mutation", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer(["drop", { status: 200 }])
      const read = yield* Effect.fork(send(server.url + "/v1/me", "GET"))
      yield* Effect.promise(() => server.next(1))
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* Fiber.join(read)).status, 200)

      const again = yield* scriptedServer(["drop", { status: 200 }])
      const error = yield* Effect.flip(send(again.url + "/v1/machines/x", "DELETE"))
      assert.strictEqual(error._tag, "RequestError")
      assert.strictEqual(again.seen.length, 1)
    }))

  it.scoped("a connection refused on this host is retried once, and every retry is told first", () =>
    Effect.gen(function*() {
      const closed = yield* scriptedServer([{ status: 200 }])
      const url = closed.url
      yield* Effect.promise(() => new Promise((resolve) => closed.server.close(resolve)))
      const notices: Array<RetryNotice> = []
      const policy = {
        ...defaultRetryPolicy,
        onRetry: (notice: RetryNotice) => Effect.sync(() => notices.push(notice))
      }
      const call = yield* Effect.fork(
        Effect.flatMap(
          HttpClient.HttpClient,
          (client) => withRetries(policy)(client).execute(HttpClientRequest.get(url + "/v1/me"))
        ).pipe(
          Effect.provide(FetchHttpClient.layer)
        )
      )
      // The notice comes before the wait: once it is heard, the wait is on the TestClock.
      yield* pausedOrDone(call)
      assert.strictEqual(notices.length, 1, "the notice comes before the wait")
      yield* TestClock.adjust("1 second")
      const error = yield* Effect.flip(Fiber.join(call))
      assert.strictEqual(error._tag, "RequestError")
      assert.strictEqual(notices.length, 1)
      assert.include(notices[0]!, { method: "GET", retry: 1, retries: 1, reason: "connection refused (ECONNREFUSED)" })

      const busy = yield* scriptedServer([{ status: 503 }, { status: 200 }])
      const told: Array<RetryNotice> = []
      const answered = yield* Effect.fork(
        Effect.flatMap(
          HttpClient.HttpClient,
          (client) =>
            withRetries({ ...defaultRetryPolicy, onRetry: (notice) => Effect.sync(() => told.push(notice)) })(client)
              .execute(HttpClientRequest.get(busy.url + "/v1/me"))
        ).pipe(Effect.provide(FetchHttpClient.layer))
      )
      yield* Effect.promise(() => busy.next(1))
      yield* pausedOrDone(answered)
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* Fiber.join(answered)).status, 200)
      assert.include(told[0]!, { reason: "the server answered 503", retry: 1, retries: 5 })
    }))

  it.scoped("a Retry-After longer than the policy allows is not waited for: the answer comes back", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([{ status: 503, headers: { "retry-after": "3600" } }, { status: 200 }])
      const response = yield* send(server.url + "/v1/me", "GET")
      assert.strictEqual(response.status, 503)
      assert.strictEqual(server.seen.length, 1)
    }))

  it("Retry-After is delta seconds or an HTTP date", () => {
    const now = Date.parse("2030-01-01T00:00:00Z")
    assert.strictEqual(retryAfterMillis("7", now), 7000)
    assert.strictEqual(retryAfterMillis("Tue, 01 Jan 2030 00:00:05 GMT", now), 5000)
    assert.strictEqual(retryAfterMillis("Mon, 31 Dec 2029 00:00:00 GMT", now), 0)
    assert.strictEqual(retryAfterMillis("soon", now), undefined)
    assert.strictEqual(retryAfterMillis(undefined, now), undefined)
  })

  it.scoped("through makeClient: a create answered 503 is sent again with its key and decodes the 202", () =>
    Effect.gen(function*() {
      const accepted = {
        operation_id: "0190d9a2-0000-7000-8000-000000000001",
        machine_id: "0190d9a2-0000-7000-8000-000000000002",
        status: "pending",
        operation_url: "http://x/v1/operations/0190d9a2-0000-7000-8000-000000000001",
        requested_action: "create"
      }
      const server = yield* scriptedServer([
        { status: 503, headers: { "retry-after": "1" }, body: { code: "runtime_unavailable" } },
        { status: 202, body: accepted }
      ])
      const svc = yield* makeClient({ baseUrl: server.url, apiKey: "svc_test" })
      const call = yield* Effect.fork(svc.machines.create({ payload: { name: "m" } }))
      yield* Effect.promise(() => server.next(1))
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(call)
      assert.strictEqual(result.operation_id, accepted.operation_id)
      assert.strictEqual(server.seen.length, 2)
      assert.strictEqual(server.seen[0]!.key, server.seen[1]!.key)
      assert.isDefined(server.seen[0]!.key)

      const once = yield* makeClient({ baseUrl: server.url, retry: false })
      const before = server.seen.length
      yield* Effect.ignore(once.members.me())
      assert.strictEqual(server.seen.length, before + 1)
    }))
})

const operation = (status: string) => ({
  id: "0190d9a2-0000-7000-8000-000000000001",
  machine_id: "0190d9a2-0000-7000-8000-000000000002",
  kind: "exec",
  status,
  attempt_count: 1,
  error_code: null,
  completed_but_unchanged: false,
  stop_reason: null,
  exec_result: null,
  file_ranges: null,
  starting_soon: null,
  created_at: "2030-01-01T00:00:00.000Z",
  started_at: null,
  finished_at: null
})

describe("waitOperation", () => {
  it.scoped("reads at 0, 250 ms, then doubling pauses up to 2 s, until the operation is terminal", () =>
    Effect.gen(function*() {
      const pending = { status: 200, body: operation("pending") }
      const server = yield* scriptedServer([pending, pending, pending, pending, pending, pending, {
        status: 200,
        body: operation("succeeded")
      }])
      const svc = yield* makeClient({ baseUrl: server.url })
      const wait = yield* Effect.fork(svc.waitOperation("0190d9a2-0000-7000-8000-000000000001"))
      yield* Effect.promise(() => server.next(1))
      // Pauses: 250, 500, 1000, 2000, 2000, 2000 ms.
      let now = 0
      for (const [pause, count] of [[250, 2], [500, 3], [1000, 4], [2000, 5], [2000, 6], [2000, 7]] as const) {
        now += pause
        yield* asleepUntil(now)
        yield* TestClock.adjust(pause - 1)
        assert.strictEqual(server.seen.length, count - 1, `not before ${pause} ms`)
        yield* TestClock.adjust(1)
        yield* Effect.promise(() => server.next(count))
      }
      const done = yield* Fiber.join(wait)
      assert.strictEqual(done.status, "succeeded")
    }))

  it.scoped("fails with WaitTimeout after 10 minutes; the operation is left as it is", () =>
    Effect.gen(function*() {
      const server = yield* scriptedServer([{ status: 200, body: operation("uncertain") }])
      const svc = yield* makeClient({ baseUrl: server.url })
      const wait = yield* Effect.fork(Effect.flip(svc.waitOperation({ operation_id: operation("x").id })))
      yield* Effect.promise(() => server.next(1))
      yield* TestClock.adjust("599 seconds")
      yield* Effect.promise(() => server.next(2))
      yield* pausedOrDone(wait)
      assert.isNull(wait.unsafePoll(), "still waiting a second before the 10 minutes")
      for (let i = 0; i < 5 && wait.unsafePoll() === null; i++) {
        yield* TestClock.adjust("1 second")
        yield* pausedOrDone(wait)
      }
      const error = yield* Fiber.join(wait)
      assert.strictEqual(error._tag, "WaitTimeout")
      assert.isTrue(server.seen.every((s) => s.method === "GET"), "a wait changes nothing")
    }))
})
