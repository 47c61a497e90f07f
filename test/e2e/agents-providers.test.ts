/**
 * codex and opencode end to end, like claude in agents.test.ts: the real CLI in a sandboxed
 * machine against a scripted model server on loopback speaking its provider's wire format
 * (OpenAI Responses for codex; Anthropic Messages for opencode's `anthropic` provider, through
 * the base URL variables of the machine's environment). Live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import { beforeAll } from "vitest"
import { finishedTurn as finishedTurnWithin, installTestAgents, prompt, testAgentsDir } from "../support/Agents.js"
import { client } from "../support/Http.js"
import { type Api, decode, eventually, runningMachine, sh } from "../support/Machines.js"
import { anthropicServer, type ModelServer, openaiServer } from "../support/ModelServers.js"
import { startServer } from "../support/TestServer.js"

beforeAll(() => installTestAgents(), 10 * 60_000)

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

interface Case {
  readonly provider: "codex" | "opencode"
  readonly model: string
  readonly server: Effect.Effect<ModelServer, never, import("effect").Scope.Scope>
  readonly variables: (url: string) => Record<string, string>
  readonly tool: string
}

const cases: ReadonlyArray<Case> = [
  {
    provider: "codex",
    model: "gpt-5",
    server: openaiServer,
    variables: (url) => ({ OPENAI_BASE_URL: `${url}/v1`, OPENAI_API_KEY: "sk-test" }),
    tool: "shell"
  },
  {
    provider: "opencode",
    model: "anthropic/claude-sonnet-4-5",
    server: anthropicServer,
    variables: (url) => ({ ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: "sk-ant-test" }),
    tool: "bash"
  }
]

const setup = (test: Case) =>
  Effect.gen(function*() {
    const model = yield* test.server
    const server = yield* startServer({
      runtime: "sandbox",
      secretKeys,
      agentsDir: testAgentsDir,
      machineNetwork: { lan: false, hostPorts: [model.port] }
    })
    const owner = yield* server.bootstrap(`${test.provider}@example.com`)
    const api = client(server.url, { key: owner.api_key })
    const environment = yield* api("POST", "/v1/environments", {
      json: { name: "keys", variables: test.variables(model.machineUrl) }
    })
    assert.strictEqual(environment.status, 201, environment.text)
    const machineId = yield* runningMachine(api, test.provider, {
      environment_id: environment.body.id,
      internet_access: true
    })
    return { model, api, machineId }
  })

const finishedTurn = (api: Api, machineId: string, conversationId: string, turnId: string) =>
  finishedTurnWithin(api, machineId, conversationId, turnId, 120_000)

for (const test of cases) {
  describe(`agents: ${test.provider}`, () => {
    it.scopedLive(
      "its tool writes a file in the machine; events in order with usage; resume continues its session",
      () =>
        Effect.gen(function*() {
          const { api, machineId, model } = yield* setup(test)
          const started = yield* prompt(api, machineId, {
            provider: test.provider,
            model: test.model,
            text: `WRITE /root/${test.provider}.txt hello-from-${test.provider}`
          })
          assert.strictEqual(started.status, 202, started.text)
          const conversationId = started.body.conversation_id
          const first = yield* finishedTurn(api, machineId, conversationId, started.body.turn_id)
          const types: Array<string> = first.events.map((event: any) => event.type)
          assert.strictEqual(first.latest_turn.status, "completed", JSON.stringify(first.events))
          assert.deepStrictEqual(first.events.map((event: any) => event.seq), types.map((_, i) => i + 1))
          assert.strictEqual(types[0], "turn_started")
          assert.deepStrictEqual(types.slice(-2), ["turn_finished", "idle"])
          const call = first.events.findIndex((event: any) => event.type === "tool_call" && event.name === test.tool)
          const result = first.events.findIndex((event: any) => event.type === "tool_result")
          const message = first.events.findIndex((event: any) => event.type === "message" && /wrote/.test(event.text))
          assert.isTrue(call > 0 && result > call && message > result, types.join(","))
          const usage = first.events.filter((event: any) => event.type === "usage").at(-1)
          assert.isAbove(usage.usage.input_tokens, 0)
          assert.isAbove(usage.usage.output_tokens, 0)
          assert.isAbove(usage.usage.cost_micro_usd, 0)
          const cat = yield* sh(api, machineId, `cat /root/${test.provider}.txt`)
          assert.strictEqual(decode(cat.exec_result.stdout_base64), `hello-from-${test.provider}`)

          const before = model.requests.length
          const second = yield* prompt(api, machineId, { conversation_id: conversationId, text: "and now say hi" })
          assert.strictEqual(second.status, 202, second.text)
          assert.strictEqual(second.body.resume, true)
          const done = yield* finishedTurn(api, machineId, conversationId, second.body.turn_id)
          assert.strictEqual(done.latest_turn.status, "completed", JSON.stringify(done.events.slice(-6)))
          const later = model.requests.slice(before).map((request) => JSON.stringify(request.body))
          assert.isTrue(
            later.some((text) => text.includes(`hello-from-${test.provider}`) && text.includes("and now say hi"))
          )
          if (test.provider === "codex") {
            // codex reports its thread's totals: the second turn's usage is its own, not the sum.
            const usages = done.events.filter((event: any) => event.type === "usage")
            assert.isAtMost(usages.at(-1).usage.input_tokens, usages[0].usage.input_tokens)
          }
        }),
      240_000
    )

    it.scopedLive(
      "a steer runs in the same turn after the current run (queued); interrupt ends a hanging turn",
      () =>
        Effect.gen(function*() {
          const { api, machineId, model } = yield* setup(test)
          const slow = yield* prompt(api, machineId, { provider: test.provider, model: test.model, text: "SLOW" })
          assert.strictEqual(slow.status, 202, slow.text)
          const conversationId = slow.body.conversation_id
          const steer = yield* api("POST", `/v1/machines/${machineId}/agents/steer`, {
            json: { conversation_id: conversationId, text: "steered words" }
          })
          assert.strictEqual(steer.status, 202, steer.text)
          const done = yield* finishedTurn(api, machineId, conversationId, slow.body.turn_id)
          assert.strictEqual(done.latest_turn.status, "completed", JSON.stringify(done.events))
          const accepted = done.events.find((event: any) => event.type === "input_accepted")
          assert.isDefined(accepted, done.events.map((event: any) => event.type).join(","))
          assert.strictEqual(accepted.input_id, steer.body.input_id)
          assert.isTrue(done.events.some((event: any) => event.type === "message" && /steered words/.test(event.text)))
          assert.isTrue(model.requests.some((request) => JSON.stringify(request.body).includes("steered words")))

          const hang = yield* prompt(api, machineId, { conversation_id: conversationId, text: "HANG" })
          assert.strictEqual(hang.status, 202, hang.text)
          yield* eventually(Effect.sync(() => model.hanging() > 0 ? true : undefined), 90_000)
          const interrupt = yield* api("POST", `/v1/machines/${machineId}/agents/interrupt`, {
            json: { conversation_id: conversationId }
          })
          assert.strictEqual(interrupt.status, 202, interrupt.text)
          const stopped = yield* finishedTurn(api, machineId, conversationId, hang.body.turn_id)
          assert.strictEqual(stopped.latest_turn.status, "interrupted")
          assert.strictEqual(stopped.events.at(-2).outcome, "interrupted")
          const left = yield* sh(api, machineId, "grep -l SVC_AGENT_TURN /proc/[0-9]*/environ 2>/dev/null | wc -l")
          assert.strictEqual(decode(left.exec_result.stdout_base64).trim(), "0")
        }),
      240_000
    )
  })
}
