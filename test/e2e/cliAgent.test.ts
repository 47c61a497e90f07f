/**
 * `svc agent` against a real server: the real `claude` in a sandboxed machine answering from the
 * scripted Anthropic server (test/support/ModelServers.ts). `prompt` follows the turn to `idle`
 * (text and JSON lines), continues a conversation, and Ctrl-C (SIGINT) interrupts a hanging turn
 * and still follows it to its end. Live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import { beforeAll } from "vitest"
import { installTestAgents, testAgentsDir } from "../support/Agents.js"
import { cliFor } from "../support/Cli.js"
import { client } from "../support/Http.js"
import { eventually, runningMachine } from "../support/Machines.js"
import { anthropicServer } from "../support/ModelServers.js"
import { startServer } from "../support/TestServer.js"

beforeAll(() => installTestAgents(), 10 * 60_000)

const setup = Effect.gen(function*() {
  const model = yield* anthropicServer
  const server = yield* startServer({
    runtime: "sandbox",
    secretKeys: { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] },
    agentsDir: testAgentsDir,
    machineNetwork: { lan: false, hostPorts: [model.port] }
  })
  const owner = yield* server.bootstrap("agent-cli@example.com")
  const api = client(server.url, { key: owner.api_key })
  const environment = yield* api("POST", "/v1/environments", {
    json: { name: "keys", variables: { ANTHROPIC_BASE_URL: model.machineUrl, ANTHROPIC_API_KEY: "sk-ant-test" } }
  })
  assert.strictEqual(environment.status, 201, environment.text)
  yield* runningMachine(api, "agent", { environment_id: environment.body.id, internet_access: true })
  const cli = yield* cliFor(server.url, owner.api_key)
  return { model, cli }
})

describe("svc CLI: agent", () => {
  it.scopedLive(
    "prompt follows the turn to idle; --json gives every event as a line; a conversation continues",
    () =>
      Effect.gen(function*() {
        const { cli } = yield* setup
        const first = yield* cli.run([
          "agent",
          "prompt",
          "agent",
          "WRITE /root/from-cli.txt hello",
          "--provider",
          "claude_code"
        ])
        assert.strictEqual(first.code, 0, first.stderr)
        // The agent's messages are the answer; its tool calls are commentary on stderr.
        assert.include(first.stdout, "wrote /root/from-cli.txt")
        assert.match(first.stderr, /\n→ \S+ .*from-cli\.txt/)
        assert.match(first.stderr, /^conversation ([0-9a-f-]{36}), turn [0-9a-f-]{36}\n/)
        assert.include(first.stderr, "turn completed\n")
        const conversation = /^conversation ([0-9a-f-]{36})/.exec(first.stderr)![1]!

        const second = yield* cli.run(["agent", "prompt", "agent", "-", "--conversation", conversation, "--json"], {
          input: "WRITE /root/again.txt again"
        })
        assert.strictEqual(second.code, 0, second.stderr)
        const events = second.stdout.trimEnd().split("\n").map((line) => JSON.parse(line))
        assert.strictEqual(events[0].type, "turn_started")
        assert.strictEqual(events.at(-1).type, "idle")
        const finished = events.find((e) => e.type === "turn_finished")
        assert.strictEqual(finished.outcome, "completed")
        // Only this turn's events: the first turn's are not repeated.
        assert.isTrue(events.filter((e) => e.type !== "idle").every((e) => e.turn_id === events[0].turn_id))
        assert.isTrue(events.some((e) => e.type === "message" && e.text.includes("wrote /root/again.txt")))

        const listed = yield* cli.run(["agent", "conversations", "agent", "--json"])
        const conversations = JSON.parse(listed.stdout)
        assert.deepStrictEqual(conversations.map((c: any) => [c.id, c.status, c.turn_count]), [[
          conversation,
          "idle",
          2
        ]])
        const table = yield* cli.run(["agent", "conversations", "agent"])
        assert.match(
          table.stdout,
          new RegExp(`^ID +PROVIDER +STATUS +TURNS +UPDATED\\n${conversation} +claude_code +idle +2 `)
        )
        const models = yield* cli.run(["agent", "models", "--json"])
        assert.include(JSON.parse(models.stdout).providers.map((p: any) => p.provider), "claude_code")
        const usage = yield* cli.run(["agent", "prompt", "agent", "no provider"])
        assert.strictEqual(usage.code, 2)
      }),
    300_000
  )

  it.scopedLive("Ctrl-C interrupts the running turn and follows it to its end; exit 130", () =>
    Effect.gen(function*() {
      const { cli, model } = yield* setup
      const result = yield* cli.run(["agent", "prompt", "agent", "HANG", "--provider", "claude_code"], {
        started: (child) => {
          void Effect.runPromise(
            eventually(Effect.sync(() => model.hanging() > 0 ? true : undefined), 120_000).pipe(
              Effect.andThen(Effect.sync(() => child.kill("SIGINT")))
            )
          )
        }
      })
      assert.strictEqual(result.code, 130, result.stderr)
      assert.include(result.stderr, "interrupting the turn")
      assert.include(result.stderr, "turn interrupted\n")
      const listed = yield* cli.run(["agent", "conversations", "agent", "--json"])
      const [conversation] = JSON.parse(listed.stdout)
      assert.strictEqual(conversation.status, "idle")
      assert.strictEqual(conversation.latest_turn.status, "interrupted")
    }), 300_000)
})
