/**
 * Bodies are checked at the door (extensions.md §4, issue 23 item 1): an unknown member, a string a
 * machine cannot take (a NUL byte; a path, an argument or an environment entry over the kernel's
 * limits) answers 422 naming the field and records nothing; a body whose members are all optional
 * may be left out. Raw requests where the typed client cannot send the bad body, the typed client
 * (makeClient) elsewhere.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, ParseResult } from "effect"
import { makeClient } from "../../src/index.js"
import { client, type Reply, request } from "../support/Http.js"
import { settled } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const setup = Effect.gen(function*() {
  // Room for bodies above one argument's limit (128 KiB), which the door must refuse, not the edge.
  const server = yield* startServer({ maxBodyBytes: 4 * 1024 * 1024 })
  const owner = yield* server.bootstrap("door@example.com")
  const http = client(server.url, { key: owner.api_key })
  const svc = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
  // The server fills in every other field's default.
  const created = yield* svc.machines.create({ payload: { name: "box", size: "small", internet_access: false } })
  yield* settled(http, created.operation_id)
  const id = created.machine_id
  /** What the machine has been asked so far: every accepted request records an operation. */
  const operations = Effect.map(
    svc.operations.listForMachine({ path: { id }, urlParams: { limit: "50" } }),
    (page) => page.items.map((operation) => operation.id).sort()
  )
  return { server, http, svc, id, operations }
})

/** A 422 `invalid_request` whose `field_errors` name `field`; answers that field's message. */
const refused = (reply: Reply, field: string) => {
  assert.strictEqual(reply.status, 422, reply.text)
  assert.strictEqual(reply.body.code, "invalid_request")
  const error = (reply.body.field_errors as Array<{ field: string; message: string }>).find((e) => e.field === field)
  assert.isDefined(error, `${field} not named in ${reply.text}`)
  return error!.message
}

describe("the door", () => {
  it.scopedLive("refuses unknown members at any depth, on routes with and without a body; nothing is recorded", () =>
    Effect.gen(function*() {
      const { http, id, operations, server, svc } = yield* setup
      const before = yield* operations

      const typo = yield* http("POST", "/v1/machines", { json: { name: "typo", internet_acess: false } })
      assert.include(refused(typo, "internet_acess"), "unknown member")
      const machines = yield* svc.machines.list({ urlParams: { limit: "50" } })
      assert.deepStrictEqual(machines.items.map((machine) => machine.name), ["box"])

      refused(yield* http("POST", `/v1/machines/${id}/exec`, { json: { shell: "true", timeout: 5 } }), "timeout")
      refused(
        yield* http("POST", `/v1/machines/${id}/files/read`, {
          json: { ranges: [{ path: "/etc/hostname", lenght: 3 }] }
        }),
        "ranges.0.lenght"
      )
      refused(
        yield* http("POST", `/v1/machines/${id}/exec`, { json: { shell: "true", env: { "BAD-NAME": "x" } } }),
        "env.BAD-NAME"
      )
      // Routes that take no body refuse one with members (a `force` meant for stop is not a restart's).
      for (const [method, path] of [["POST", "restart"], ["POST", "start"], ["DELETE", ""]] as const) {
        const reply = yield* http(method, `/v1/machines/${id}${path === "" ? "" : `/${path}`}`, {
          json: { force: true }
        })
        assert.include(refused(reply, "force"), "takes no body")
      }
      refused(
        yield* http("POST", `/v1/machines/${id}/restart`, { body: "force", headers: { "content-type": "text/plain" } }),
        "body"
      )
      // A caller who may not call the route hears that first, not the body's rules.
      const anonymous = yield* request(server.url, "POST", `/v1/machines/${id}/restart`, { json: { force: true } })
      assert.strictEqual(anonymous.status, 401)
      assert.deepStrictEqual(yield* operations, before)
    }))

  it.scopedLive("refuses strings a machine cannot take: NUL bytes, over-long paths and arguments; nothing is recorded", () =>
    Effect.gen(function*() {
      const { http, id, operations, svc } = yield* setup
      const before = yield* operations
      const exec = (json: Record<string, unknown>) => http("POST", `/v1/machines/${id}/exec`, { json })
      const nul = "must not contain a NUL byte"

      assert.include(refused(yield* exec({ command: ["echo", "a\u0000b"] }), "command.1"), nul)
      assert.include(refused(yield* exec({ shell: "echo a\u0000b" }), "shell"), nul)
      assert.include(refused(yield* exec({ shell: "pwd", cwd: "/tmp\u0000x" }), "cwd"), nul)
      assert.include(refused(yield* exec({ shell: "env", env: { A: "x\u0000y" } }), "env.A"), nul)
      const write = (path: string) =>
        http("POST", `/v1/machines/${id}/files/write`, { json: { path, data_base64: "eA==" } })
      assert.include(refused(yield* write("/tmp/a\u0000b"), "path"), nul)
      assert.include(
        refused(
          yield* http("POST", `/v1/machines/${id}/files/read`, { json: { ranges: [{ path: "/\u0000" }] } }),
          "ranges.0.path"
        ),
        nul
      )
      // Paths: at most 4095 bytes (PATH_MAX with its NUL), each name at most 255 bytes (NAME_MAX).
      const long = "/" + Array.from({ length: 20 }, () => "d".repeat(204)).join("/") // 4100 bytes
      assert.include(refused(yield* write(long), "path"), "at most 4095 bytes")
      assert.include(refused(yield* write("/tmp/" + "n".repeat(256)), "path"), "at most 255 bytes")
      assert.include(refused(yield* exec({ shell: "pwd", cwd: long }), "cwd"), "at most 4095 bytes")
      // One argument, a shell line or NAME=value: at most 131071 bytes (MAX_ARG_STRLEN with its NUL).
      const big = "x".repeat(128 * 1024)
      assert.include(refused(yield* exec({ command: ["echo", big] }), "command.1"), "at most 131071 bytes")
      assert.include(refused(yield* exec({ shell: `echo ${big}` }), "shell"), "at most 131071 bytes")
      assert.include(refused(yield* exec({ shell: "env", env: { A: big } }), "env.A"), "at most 131071 bytes")
      // The command and its variables together: at most 1 MiB.
      const many = Array.from({ length: 9 }, () => "y".repeat(120 * 1024))
      assert.include(refused(yield* exec({ command: ["echo", ...many] }), "command"), "together")

      // Not only the machines routes: a setup script, an environment's values, a prompt.
      const script = yield* http("POST", "/v1/machines", { json: { name: "nul", setup_script: "echo \u0000" } })
      assert.include(refused(script, "setup_script"), nul)
      const environment = yield* http("POST", "/v1/environments", { json: { name: "e", variables: { A: "\u0000" } } })
      assert.include(refused(environment, "variables.A"), nul)
      const prompt = yield* http("POST", `/v1/machines/${id}/agents/prompt`, {
        json: { provider: "claude_code", text: "hi\u0000" }
      })
      assert.include(refused(prompt, "text"), nul)

      // The typed client checks the same schema before it sends anything.
      const error = yield* Effect.flip(
        svc.machines.exec({ path: { id }, headers: {}, payload: { command: ["echo", "a\u0000b"], timeout_seconds: 5 } })
      )
      assert.isTrue(ParseResult.isParseError(error), String(error))

      assert.deepStrictEqual(yield* operations, before)
      const machines = yield* svc.machines.list({ urlParams: { limit: "50" } })
      assert.deepStrictEqual(machines.items.map((machine) => machine.name), ["box"])
    }))

  it.scopedLive("a body whose members are all optional may be left out, with or without a content type", () =>
    Effect.gen(function*() {
      const { http, id, svc } = yield* setup
      const bare = yield* http("POST", `/v1/machines/${id}/stop`)
      assert.strictEqual(bare.status, 202, bare.text)
      yield* settled(http, bare.body.operation_id)
      const typed = yield* http("POST", `/v1/machines/${id}/start`, { headers: { "content-type": "application/json" } })
      assert.strictEqual(typed.status, 202, typed.text)
      const stop = yield* http("POST", `/v1/machines/${id}/stop`, {
        body: "",
        headers: { "content-type": "application/json" }
      })
      assert.strictEqual(stop.status, 202, stop.text)
      assert.strictEqual((yield* settled(http, stop.body.operation_id)).status, "succeeded")
      const patched = yield* http("PATCH", `/v1/machines/${id}`, { body: "" })
      assert.strictEqual(patched.status, 200, patched.text)
      // Through the typed client, which sends the defaults.
      const forced = yield* svc.machines.stop({ path: { id }, headers: {}, payload: { force: false } })
      assert.strictEqual(forced.status, "pending")
      // A body with required members names each missing one, empty or not.
      const empty = yield* http("POST", "/v1/machines", { body: "" })
      assert.include(refused(empty, "name"), "is missing")
    }))
})
