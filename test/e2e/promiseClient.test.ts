/**
 * The Promise client (`createClient`) against the real server, written as a plain TypeScript
 * program would use it: await a route, wait for an operation, iterate an operation's events, catch
 * an API error by its class.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createClient, StreamError } from "../../src/index.js"
import { startServer } from "../support/TestServer.js"

describe("Promise client", () => {
  it.scopedLive(
    "create, wait, exec and its output as an async iterator; errors are the API's classes",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const owner = yield* server.bootstrap("promise@example.com")
        const program = async () => {
          const svc = createClient({ url: server.url, apiKey: owner.api_key })
          const me = await svc.members.me()
          assert.strictEqual(me.user.email, "promise@example.com")

          const accepted = await svc.machines.create({ payload: { name: "web" } })
          const seen: Array<string> = []
          const created = await svc.wait(accepted, { onProgress: (op) => seen.push(op.status) })
          assert.strictEqual(created.status, "succeeded")
          assert.strictEqual(seen[seen.length - 1], "succeeded")

          const exec = await svc.machines.exec({
            path: { id: accepted.machine_id },
            payload: { command: ["sh", "-c", "echo hello; echo oops >&2"] }
          })
          let stdout = ""
          const kinds = new Set<string>()
          for await (const event of svc.events.operation(exec.operation_id)) {
            kinds.add(event.event)
            if (event.event === "output") {
              const output = JSON.parse(event.data) as { stream: string; data_base64: string }
              if (output.stream === "stdout") stdout += Buffer.from(output.data_base64, "base64").toString()
            }
            if (event.event === "end") break
          }
          assert.strictEqual(stdout, "hello\n")
          assert.isTrue(kinds.has("status") && kinds.has("end"), [...kinds].join(","))
          const done = await svc.wait(exec)
          assert.strictEqual(done.exec_result?.exit_code, 0)

          // An error answer rejects with the API's own error class: its tag names the code.
          const missing = await svc.machines.get({ path: { id: "00000000-0000-4000-8000-000000000000" } }).then(
            () => undefined,
            (error: unknown) => error as { _tag: string } & Error
          )
          assert.strictEqual(missing?._tag, "resource_not_found")
          assert.instanceOf(missing, Error)

          const anonymous = createClient({ url: server.url, retry: false })
          const refused = await anonymous.machines.list().catch((error: { _tag: string }) => error._tag)
          assert.strictEqual(refused, "unauthenticated")
          const stream = await (async () => {
            for await (const _ of anonymous.events.operation(exec.operation_id)) return undefined
          })().catch((error: unknown) => error)
          assert.instanceOf(stream, StreamError)
          assert.strictEqual((stream as StreamError).status, 401)

          // The same client as Effects for code that uses Effect.
          assert.strictEqual((await Effect.runPromise(svc.effect.members.me())).user.email, "promise@example.com")
        }
        yield* Effect.promise(program)
      }),
    300_000
  )
})
