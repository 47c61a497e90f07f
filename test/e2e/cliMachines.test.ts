/**
 * The CLI against a real server (the sandbox driver): machines, operations and their progress
 * lines, exec's exit code, exit codes 1 (an API error, its code printed) and 2 (a usage error).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeClient } from "../../src/index.js"
import { cliFor, frontServer } from "../support/Cli.js"
import { freePort, startServer } from "../support/TestServer.js"

const setup = Effect.gen(function*() {
  const server = yield* startServer({ maxBodyBytes: 24 * 1024 * 1024 })
  const owner = yield* server.bootstrap("cli@example.com")
  const cli = yield* cliFor(server.url, owner.api_key)
  const client = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
  return { server, owner, cli, client }
})

const uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

describe("svc CLI: machines and operations", () => {
  it.scopedLive(
    "create --wait, list as a table and as JSON, get by name, exec with the command's exit code",
    () =>
      Effect.gen(function*() {
        const { cli } = yield* setup
        const created = yield* cli.run(["machines", "create", "web", "--wait"])
        assert.strictEqual(created.code, 0, created.stderr)
        assert.match(created.stdout, new RegExp(`^create web \\(${uuid}\\): done`))
        // Not a terminal: a plain line per state, never a carriage return.
        assert.match(created.stderr, new RegExp(`operation create ${uuid}: succeeded\\n$`))
        assert.notInclude(created.stderr, "\r")

        const table = yield* cli.run(["machines", "list"])
        assert.strictEqual(table.code, 0, table.stderr)
        const [header, row, ...rest] = table.stdout.trimEnd().split("\n")
        assert.match(header!, /^NAME +ID +STATE +SIZE +IMAGE +CREATED$/)
        assert.match(
          row!,
          new RegExp(`^web +${uuid} +running +default +default +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d$`)
        )
        assert.deepStrictEqual(rest, [])

        const listed = yield* cli.run(["machines", "list", "--json"])
        const machines = JSON.parse(listed.stdout)
        assert.deepStrictEqual(machines.map((m: any) => [m.name, m.state]), [["web", "running"]])
        const got = JSON.parse((yield* cli.run(["machines", "get", "web", "--json"])).stdout)
        assert.strictEqual(got.id, machines[0].id)

        const exec = yield* cli.run(["machines", "exec", "web", "--", "sh", "-c", "echo out; echo err >&2; exit 3"])
        assert.strictEqual(exec.code, 3)
        assert.strictEqual(exec.stdout, "out\n")
        assert.strictEqual(exec.stderr, "err\n")
        const piped = yield* cli.run([
          "machines",
          "exec",
          "web",
          "--stdin",
          "--env",
          "GREETING=hi",
          "--shell",
          "printf \"$GREETING \"; cat"
        ], {
          input: "from stdin"
        })
        assert.strictEqual(piped.code, 0, piped.stderr)
        assert.strictEqual(piped.stdout, "hi from stdin")
      }),
    180_000
  )

  it.scopedLive(
    "ops get, wait and events of an exec; wait prints a plain line per state off a terminal",
    () =>
      Effect.gen(function*() {
        const { cli, client } = yield* setup
        const accepted = yield* client.machines.create({ payload: { name: "ops" } })
        // Accepted, not waited for: the CLI waits.
        const waited = yield* cli.run(["ops", "wait", accepted.operation_id])
        assert.strictEqual(waited.code, 0, waited.stderr)
        assert.strictEqual(waited.stdout, `create ${accepted.operation_id}: succeeded\n`)
        const lines = waited.stderr.trimEnd().split("\n")
        assert.strictEqual(lines.at(-1), `operation create ${accepted.operation_id}: succeeded`)
        // Each line a change: no state printed twice in a row.
        lines.forEach((line, i) => assert.notStrictEqual(line, lines[i - 1]))

        const exec = JSON.parse(
          (yield* cli.run(["machines", "exec", "ops", "--json", "--shell", "echo streamed"])).stdout
        )
        assert.strictEqual(exec.status, "succeeded")
        const got = JSON.parse((yield* cli.run(["ops", "get", exec.id, "--json"])).stdout)
        assert.strictEqual(got.exec_result.exit_code, 0)
        const events = yield* cli.run(["ops", "events", exec.id, "--json"])
        assert.strictEqual(events.code, 0, events.stderr)
        const parsed = events.stdout.trimEnd().split("\n").map((line) => JSON.parse(line))
        assert.strictEqual(parsed.at(-1).event, "end")
        const output = parsed.find((e) => e.event === "output")
        assert.strictEqual(Buffer.from(output.data.data_base64, "base64").toString(), "streamed\n")
        const human = yield* cli.run(["ops", "events", exec.id])
        assert.include(human.stdout, "status succeeded (attempt 1)\n")
        assert.include(human.stdout, "streamed\n")

        // A failed operation: exit 1 naming its error code.
        const stop = yield* cli.run(["machines", "stop", "ops", "--wait"])
        assert.strictEqual(stop.code, 0, stop.stderr)
        const notRunning = yield* cli.run(["machines", "exec", "ops", "--", "true"])
        assert.strictEqual(notRunning.code, 1)
        assert.match(notRunning.stderr, /^svc: error machine_not_running \(409\): /)
      }),
    180_000
  )

  it.scopedLive(
    "exit 1 on an API error with its code, 2 on a usage error, and nothing sent for the latter",
    () =>
      Effect.gen(function*() {
        const { cli, server } = yield* setup
        assert.strictEqual((yield* cli.run(["machines", "create", "taken", "--wait"])).code, 0)
        const taken = yield* cli.run(["machines", "create", "taken"])
        assert.strictEqual(taken.code, 1)
        assert.strictEqual(taken.stderr, "svc: error name_taken (409): A live machine is already named taken\n")
        const missing = yield* cli.run(["machines", "get", "00000000-0000-4000-8000-000000000000"])
        assert.strictEqual(missing.code, 1)
        assert.match(missing.stderr, /^svc: error resource_not_found \(404\)/)
        const unknownName = yield* cli.run(["machines", "start", "nope"])
        assert.strictEqual(unknownName.code, 1)
        assert.strictEqual(unknownName.stderr, "svc: no machine named \"nope\"\n")
        const badKey = yield* cli.run(["machines", "list"], { env: { SVC_API_KEY: "svc_aaaaaaaa_" + "b".repeat(40) } })
        assert.strictEqual(badKey.code, 1)
        assert.match(badKey.stderr, /^svc: error invalid_api_key \(401\)/)
        const down = yield* cli.run(["machines", "list"], { env: { SVC_URL: `http://127.0.0.1:${yield* freePort}` } })
        assert.strictEqual(down.code, 1)
        // Nothing listens on this host: one retry, said on stderr, then the failure (not 17 s of silence).
        assert.match(
          down.stderr,
          new RegExp(
            "^svc: GET http://127\\.0\\.0\\.1:\\d+/v1/machines: connection refused \\(ECONNREFUSED\\); " +
              "retry 1 of 1 in \\d+\\.\\d s\n" +
              "svc: cannot reach http://127\\.0\\.0\\.1:\\d+/v1/machines: ECONNREFUSED\n$"
          )
        )

        const unknownOption = yield* cli.run(["machines", "list", "--bogus"])
        assert.strictEqual(unknownOption.code, 2)
        assert.include(unknownOption.stderr, "--bogus")
        const noCommand = yield* cli.run(["machines", "exec", "taken"])
        assert.strictEqual(noCommand.code, 2)
        assert.strictEqual(noCommand.stderr, "svc: give a command after -- or --shell LINE (one of them)\n")
        const badEnv = yield* cli.run(["machines", "exec", "taken", "--env", "1X=y", "--", "true"])
        assert.strictEqual(badEnv.code, 2)
        const signedOut = yield* cli.run(["machines", "list"], { env: { SVC_API_KEY: undefined } })
        assert.strictEqual(signedOut.code, 2)
        assert.strictEqual(signedOut.stderr, "svc: not signed in: run `svc login` or set SVC_API_KEY\n")
        // The refused calls changed nothing: one machine, one create.
        const api = yield* makeClient({
          baseUrl: server.url,
          apiKey: (yield* server.bootstrap("cli@example.com")).api_key
        })
        assert.deepStrictEqual((yield* api.machines.list()).items.map((m) => m.name), ["taken"])
      }),
    180_000
  )

  it.scopedLive(
    "a read is retried after a 502; a change after a 503, with the same idempotency key",
    () =>
      Effect.gen(function*() {
        const { owner, server } = yield* setup
        const creates: Array<string | undefined> = []
        let lists = 0
        const front = yield* frontServer(server.url, (request, _body, reply) => {
          if (request.method === "POST" && request.url === "/v1/machines") {
            creates.push(request.headers["idempotency-key"] as string | undefined)
            if (creates.length === 1) return reply(503, { code: "runtime_unavailable" }, { "retry-after": "1" })
          }
          if (request.method === "GET" && request.url?.startsWith("/v1/machines?") && ++lists === 1) {
            return reply(502, { code: "bad_gateway" })
          }
          return false
        })
        const cli = yield* cliFor(front.url, owner.api_key)
        const created = yield* cli.run(["machines", "create", "retried", "--wait"])
        assert.strictEqual(created.code, 0, created.stderr)
        assert.strictEqual(creates.length, 2)
        assert.match(creates[0]!, /^[0-9a-f-]{36}$/)
        assert.strictEqual(creates[1], creates[0])
        const listed = yield* cli.run(["machines", "list", "--json"])
        assert.strictEqual(listed.code, 0, listed.stderr)
        assert.strictEqual(lists, 2)
        assert.deepStrictEqual(JSON.parse(listed.stdout).map((m: any) => m.name), ["retried"])
      }),
    120_000
  )
  // Shell completion (`svc completion bash|zsh|fish`, run through a real bash): test/e2e/cliHelp.test.ts.
})
