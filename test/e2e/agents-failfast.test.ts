/**
 * Agents fail fast and clearly (issue 23, item 6): the real claude and codex CLIs in sandboxed
 * machines, without a key, and with a key but a provider that does not answer (a closed port on
 * the machine's own loopback). Each turn ends `failed` within seconds with a meaningful
 * error_code and an `error` event, instead of retrying for minutes (the error code is svc's own
 * verdict, so it shows that svc cut the retries; how many seconds it takes is a figure of
 * docs/benchmarks.md, not asserted). Live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import { beforeAll } from "vitest"
import { finishedTurn, installTestAgents, prompt, testAgentsDir } from "../support/Agents.js"
import { client } from "../support/Http.js"
import { runningMachine } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

beforeAll(() => installTestAgents(), 10 * 60_000)

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

const cases = [
  {
    provider: "claude_code",
    model: "claude-sonnet-4-5",
    unreachable: { ANTHROPIC_BASE_URL: "http://127.0.0.1:9", ANTHROPIC_API_KEY: "sk-ant-test" }
  },
  {
    provider: "codex",
    model: "gpt-5",
    unreachable: { OPENAI_BASE_URL: "http://127.0.0.1:9/v1", OPENAI_API_KEY: "sk-test" }
  }
] as const

const turnIn = (variables: Record<string, string> | undefined, provider: string, model: string) =>
  Effect.gen(function*() {
    const server = yield* startServer({ runtime: "sandbox", secretKeys, agentsDir: testAgentsDir })
    const owner = yield* server.bootstrap(`${provider}@example.com`)
    const api = client(server.url, { key: owner.api_key })
    const environment = variables === undefined
      ? undefined
      : (yield* api("POST", "/v1/environments", { json: { name: "keys", variables } })).body.id
    const machineId = yield* runningMachine(api, provider.replace("_", "-"), {
      internet_access: true,
      ...(environment === undefined ? {} : { environment_id: environment })
    })
    const started = yield* prompt(api, machineId, { provider, model, text: "hello" })
    assert.strictEqual(started.status, 202, started.text)
    return yield* finishedTurn(api, machineId, started.body.conversation_id, started.body.turn_id, 100_000)
  })

for (const test of cases) {
  describe(`agents fail fast: ${test.provider}`, () => {
    it.scopedLive(
      "without a key the turn fails provider_key_missing before the agent starts",
      () =>
        Effect.gen(function*() {
          const done = yield* turnIn(undefined, test.provider, test.model)
          assert.strictEqual(done.latest_turn.status, "failed")
          assert.strictEqual(done.latest_turn.error_code, "provider_key_missing")
          const errors = done.events.filter((event: any) => event.type === "error")
          assert.strictEqual(errors.at(-1)?.code, "provider_key_missing")
        }),
      180_000
    )

    it.scopedLive(
      "a provider that does not answer ends the turn provider_unreachable within seconds",
      () =>
        Effect.gen(function*() {
          const done = yield* turnIn(test.unreachable, test.provider, test.model)
          assert.strictEqual(done.latest_turn.status, "failed")
          assert.strictEqual(done.latest_turn.error_code, "provider_unreachable")
        }),
      180_000
    )
  })
}
