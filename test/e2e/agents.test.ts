/**
 * Coding agents end to end: the real `claude` (installed with `svc agents install`'s code into a
 * cache folder) runs inside a real sandboxed machine against a scripted Anthropic Messages server
 * on the host's loopback, whose port svc lets machines with internet access reach at 10.0.2.2
 * (`machineNetwork.hostPorts`: the host's loopback is otherwise closed to them). Live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as NodeCrypto from "node:crypto"
import { beforeAll } from "vitest"
import { claudeMachine, finishedTurn as finishedTurnWithin, installTestAgents, prompt } from "../support/Agents.js"
import { client } from "../support/Http.js"
import { type Api, change, decode, eventually, readEvents, runningMachine, sh } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

beforeAll(() => installTestAgents(), 10 * 60_000)

const setup = claudeMachine({ maxBodyBytes: 24 * 1024 * 1024 })

const finishedTurn = (api: Api, machineId: string, conversationId: string, turnId: string) =>
  finishedTurnWithin(api, machineId, conversationId, turnId, 90_000)

describe("agents: claude_code", () => {
  it.scopedLive(
    "a prompt runs claude in the machine: its tool writes a file, events come in order with usage, resume continues",
    () =>
      Effect.gen(function*() {
        const { api, auth, machineId, model, server } = yield* setup
        const started = yield* prompt(api, machineId, {
          provider: "claude_code",
          text: "WRITE /root/agent-file.txt hello-from-claude"
        }, "prompt-1")
        assert.strictEqual(started.status, 202, started.text)
        assert.strictEqual(started.body.status, "starting")
        assert.strictEqual(started.body.provider, "claude_code")
        assert.strictEqual(started.body.resume, false)
        assert.strictEqual(
          started.body.events_url,
          `${server.url}/v1/machines/${machineId}/agents/events?conversation_id=${started.body.conversation_id}`
        )
        const conversationId = started.body.conversation_id
        const replay = yield* prompt(api, machineId, {
          provider: "claude_code",
          text: "WRITE /root/agent-file.txt hello-from-claude"
        }, "prompt-1")
        assert.strictEqual(replay.status, 202)
        assert.strictEqual(replay.body.turn_id, started.body.turn_id)
        const conflict = yield* prompt(api, machineId, { provider: "claude_code", text: "other" }, "prompt-1")
        assert.strictEqual(conflict.status, 409)
        assert.strictEqual(conflict.body.code, "idempotency_conflict")

        const first = yield* finishedTurn(api, machineId, conversationId, started.body.turn_id)
        assert.strictEqual(first.latest_turn.status, "completed")
        assert.strictEqual(first.latest_turn.exit_code, 0)
        const types = first.events.map((event: any) => event.type)
        assert.deepStrictEqual(first.events.map((event: any) => event.seq), types.map((_: string, i: number) => i + 1))
        assert.strictEqual(types[0], "turn_started")
        assert.deepStrictEqual(types.slice(-2), ["turn_finished", "idle"])
        const call = types.indexOf("tool_call")
        const result = types.indexOf("tool_result")
        const message = first.events.findIndex((event: any) => event.type === "message" && /wrote/.test(event.text))
        const usage = first.events.find((event: any) => event.type === "usage")
        assert.isTrue(call > 0 && result > call && message > result, types.join(","))
        assert.strictEqual(first.events[call].name, "Bash")
        assert.include(first.events[call].input, "agent-file.txt")
        assert.isAbove(usage.usage.input_tokens, 0)
        assert.isAbove(usage.usage.output_tokens, 0)
        assert.isAbove(usage.usage.cost_micro_usd, 0)
        assert.strictEqual(first.events.at(-2).outcome, "completed")
        assert.strictEqual(first.cursor, first.events.at(-1).seq)

        // The file exists in the machine.
        const cat = yield* sh(api, machineId, "cat /root/agent-file.txt")
        assert.strictEqual(decode(cat.exec_result.stdout_base64), "hello-from-claude")

        // SSE: the same events, ids = cursors, ends with idle; Last-Event-ID resumes without repeats.
        const eventsUrl = started.body.events_url
        const sse = yield* readEvents(eventsUrl, { ...auth, accept: "text/event-stream" })
        assert.strictEqual(sse.status, 200)
        assert.deepStrictEqual(sse.events.map((event) => event.data.type), types)
        assert.deepStrictEqual(sse.events.map((event) => Number(event.id)), types.map((_: string, i: number) => i + 1))
        assert.isTrue(sse.events.every((event) => event.event === "agent"))
        const resumed = yield* readEvents(eventsUrl, { ...auth, accept: "text/event-stream", "last-event-id": "3" })
        assert.deepStrictEqual(
          resumed.events.map((event) => Number(event.id)),
          types.slice(3).map((_: string, i: number) => i + 4)
        )

        // A second prompt resumes claude's own session: the model sees the first turn again.
        const before = model.requests.length
        const second = yield* prompt(api, machineId, { conversation_id: conversationId, text: "and now say hi" })
        assert.strictEqual(second.status, 202, second.text)
        assert.strictEqual(second.body.resume, true)
        const done = yield* finishedTurn(api, machineId, conversationId, second.body.turn_id)
        assert.strictEqual(done.latest_turn.status, "completed")
        const later = model.requests.slice(before).map((request) => JSON.stringify(request.body))
        assert.isTrue(later.some((text) => text.includes("hello-from-claude") && text.includes("and now say hi")))
        assert.isTrue(
          done.events.some((event: any) => event.type === "message" && /echo: .*and now say hi/s.test(event.text))
        )
        const turnStarted = done.events.filter((event: any) => event.type === "turn_started")
        assert.strictEqual(turnStarted.length, 2)
        assert.isTrue(turnStarted[1].resumed)
        assert.isString(turnStarted[1].session_id)

        const list = yield* api("GET", `/v1/machines/${machineId}/agents/conversations`)
        assert.strictEqual(list.status, 200)
        assert.strictEqual(list.body.conversations.length, 1)
        assert.strictEqual(list.body.conversations[0].turn_count, 2)
        assert.strictEqual(list.body.conversations[0].status, "idle")
        assert.strictEqual(list.body.conversations[0].latest_turn.turn_id, second.body.turn_id)

        // Rules: provider mismatch, unknown conversation, missing provider, text size, no active turn.
        const mismatch = yield* prompt(api, machineId, {
          conversation_id: conversationId,
          provider: "codex",
          text: "x"
        })
        assert.strictEqual(mismatch.body.code, "provider_mismatch")
        assert.strictEqual(mismatch.status, 409)
        const unknown = yield* prompt(api, machineId, { conversation_id: NodeCrypto.randomUUID(), text: "x" })
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.body.code, "conversation_not_found")
        const noProvider = yield* prompt(api, machineId, { text: "x" })
        assert.strictEqual(noProvider.status, 422)
        const tooLong = yield* prompt(api, machineId, { provider: "claude_code", text: "x".repeat(256 * 1024 + 1) })
        assert.strictEqual(tooLong.status, 422)
        assert.strictEqual(tooLong.body.field_errors[0].field, "text")
        const empty = yield* prompt(api, machineId, { provider: "claude_code" })
        assert.strictEqual(empty.status, 422)
        const idleSteer = yield* api("POST", `/v1/machines/${machineId}/agents/steer`, {
          json: { conversation_id: conversationId, text: "x" }
        })
        assert.strictEqual(idleSteer.status, 409)
        assert.strictEqual(idleSteer.body.code, "no_active_turn")
      }),
    180_000
  )

  it.scopedLive(
    "steer reaches the running turn; interrupt ends a turn whose model stream hangs",
    () =>
      Effect.gen(function*() {
        const { api, machineId, model } = yield* setup
        const slow = yield* prompt(api, machineId, { provider: "claude_code", text: "SLOW" })
        assert.strictEqual(slow.status, 202, slow.text)
        const conversationId = slow.body.conversation_id
        const busy = yield* prompt(api, machineId, { conversation_id: conversationId, text: "again" })
        assert.strictEqual(busy.status, 409)
        assert.strictEqual(busy.body.code, "agent_turn_running")
        const steerOnce = api("POST", `/v1/machines/${machineId}/agents/steer`, {
          json: { conversation_id: conversationId, text: "steered words" },
          headers: { "idempotency-key": "steer-1" }
        })
        const steer = yield* steerOnce
        assert.strictEqual(steer.status, 202, steer.text)
        assert.strictEqual(steer.body.kind, "steer")
        assert.strictEqual(steer.body.turn_id, slow.body.turn_id)
        const steerAgain = yield* steerOnce
        assert.strictEqual(steerAgain.body.input_id, steer.body.input_id, "the same key replays the first answer")
        const done = yield* finishedTurn(api, machineId, conversationId, slow.body.turn_id)
        const accepted = done.events.find((event: any) => event.type === "input_accepted")
        assert.isDefined(accepted, done.events.map((event: any) => event.type).join(","))
        assert.strictEqual(accepted.input_id, steer.body.input_id)
        assert.strictEqual(accepted.kind, "steer")
        assert.isTrue(model.requests.some((request) => JSON.stringify(request.body).includes("steered words")))
        assert.strictEqual(done.latest_turn.status, "completed")

        const hang = yield* prompt(api, machineId, { conversation_id: conversationId, text: "HANG" })
        assert.strictEqual(hang.status, 202, hang.text)
        yield* eventually(Effect.sync(() => model.hanging() > 0 ? true : undefined), 60_000)
        const interruptOnce = api("POST", `/v1/machines/${machineId}/agents/interrupt`, {
          json: { conversation_id: conversationId },
          headers: { "idempotency-key": "interrupt-1" }
        })
        const interrupt = yield* interruptOnce
        assert.strictEqual(interrupt.status, 202, interrupt.text)
        assert.strictEqual(interrupt.body.kind, "interrupt")
        const stopped = yield* finishedTurn(api, machineId, conversationId, hang.body.turn_id)
        const interruptAgain = yield* interruptOnce
        assert.strictEqual(interruptAgain.status, 202)
        assert.deepStrictEqual(
          [interruptAgain.body.input_id, interruptAgain.body.kind, interruptAgain.body.stopped],
          [interrupt.body.input_id, "interrupt", true]
        )
        assert.strictEqual(stopped.latest_turn.status, "interrupted")
        assert.isTrue(stopped.latest_turn.interrupt_requested)
        assert.strictEqual(stopped.events.at(-2).outcome, "interrupted")
        // No process of the turn is left in the machine.
        const left = yield* sh(api, machineId, "grep -l SVC_AGENT_TURN /proc/[0-9]*/environ 2>/dev/null | wc -l")
        assert.strictEqual(decode(left.exec_result.stdout_base64).trim(), "0")
      }),
    180_000
  )

  it.scopedLive(
    "attachments are written into the machine and named in the prompt; their limits",
    () =>
      Effect.gen(function*() {
        const { api, machineId, model } = yield* setup
        const data = Buffer.from("attached text\n").toString("base64")
        const started = yield* prompt(api, machineId, {
          provider: "claude_code",
          text: "read the notes",
          attachments: [{ name: "notes.txt", data_base64: data, media_type: "text/plain" }]
        })
        assert.strictEqual(started.status, 202, started.text)
        const done = yield* finishedTurn(api, machineId, started.body.conversation_id, started.body.turn_id)
        assert.strictEqual(done.latest_turn.status, "completed")
        const path = `.svc/attachments/${started.body.turn_id}/notes.txt`
        const cat = yield* sh(api, machineId, `cat /root/${path}`)
        assert.strictEqual(decode(cat.exec_result.stdout_base64), "attached text\n")
        assert.isTrue(model.requests.some((request) => JSON.stringify(request.body).includes(path)))

        const many = Array.from({ length: 17 }, (_, i) => ({ name: `f${i}`, data_base64: data }))
        const tooMany = yield* prompt(api, machineId, { provider: "claude_code", text: "x", attachments: many })
        assert.strictEqual(tooMany.status, 422)
        assert.strictEqual(tooMany.body.field_errors[0].field, "attachments")
        const big = Buffer.alloc(8 * 1024 * 1024 + 1, 1).toString("base64")
        const tooBig = yield* prompt(api, machineId, {
          provider: "claude_code",
          text: "x",
          attachments: [{ name: "a", data_base64: big }, { name: "b", data_base64: big }]
        })
        assert.strictEqual(tooBig.status, 413)
        assert.strictEqual(tooBig.body.code, "body_too_large")
        const badName = yield* prompt(api, machineId, {
          provider: "claude_code",
          text: "x",
          attachments: [{ name: "../escape", data_base64: data }]
        })
        assert.strictEqual(badName.status, 422)
      }),
    120_000
  )

  it.scopedLive(
    "stopping the machine ends its running turn; a stopped machine takes no prompt",
    () =>
      Effect.gen(function*() {
        const { api, machineId, model } = yield* setup
        const hang = yield* prompt(api, machineId, { provider: "claude_code", text: "HANG" })
        assert.strictEqual(hang.status, 202, hang.text)
        yield* eventually(Effect.sync(() => model.hanging() > 0 ? true : undefined), 60_000)
        const stop = yield* change(api, "POST", `/v1/machines/${machineId}/stop`, {})
        assert.strictEqual(stop.status, "succeeded")
        const ended = yield* finishedTurn(api, machineId, hang.body.conversation_id, hang.body.turn_id)
        assert.strictEqual(ended.latest_turn.status, "failed")
        assert.strictEqual(ended.events.at(-2).outcome, "failed")
        const refused = yield* prompt(api, machineId, { conversation_id: hang.body.conversation_id, text: "x" })
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.body.code, "machine_not_running")
      }),
    120_000
  )

  it.scoped(
    "a prompt's idempotency key replays its turn for 24 hours, then is forgotten (TestClock)",
    () =>
      Effect.gen(function*() {
        const { api, machineId } = yield* setup
        const first = yield* prompt(api, machineId, { provider: "claude_code", text: "hello" }, "daily-key")
        assert.strictEqual(first.status, 202, first.text)
        yield* finishedTurn(api, machineId, first.body.conversation_id, first.body.turn_id)
        yield* TestClock.adjust("23 hours")
        const again = yield* prompt(api, machineId, { provider: "claude_code", text: "hello" }, "daily-key")
        assert.strictEqual(again.body.turn_id, first.body.turn_id)
        yield* TestClock.adjust("2 hours")
        // The hourly cleanup runs on the TestClock but commits in real time: repeat until it has.
        const fresh = yield* eventually(
          Effect.map(
            prompt(api, machineId, { provider: "claude_code", text: "hello" }, "daily-key"),
            (reply) => reply.body?.turn_id !== first.body.turn_id ? reply : undefined
          )
        )
        assert.strictEqual(fresh.status, 202, fresh.text)
        yield* finishedTurn(api, machineId, fresh.body.conversation_id, fresh.body.turn_id)
      }),
    120_000
  )

  it.scopedLive("an Idempotency-Key is the organization's: used for an exec, it answers 409 on an agent prompt", () =>
    Effect.gen(function*() {
      // No agent is installed: the key is checked before anything else, as for every accepting route.
      const server = yield* startServer({ runtime: "sandbox", agentsDir: "/nonexistent/agents" })
      const owner = yield* server.bootstrap("keys@example.com")
      const api = client(server.url, { key: owner.api_key })
      const machineId = yield* runningMachine(api, "keys")
      const exec = yield* api("POST", `/v1/machines/${machineId}/exec`, {
        json: { shell: "true" },
        headers: { "idempotency-key": "shared-key" }
      })
      assert.strictEqual(exec.status, 202, exec.text)
      const reply = yield* prompt(api, machineId, { provider: "claude_code", text: "hi" }, "shared-key")
      assert.strictEqual(reply.status, 409, reply.text)
      assert.strictEqual(reply.body.code, "idempotency_conflict")
      const other = yield* prompt(api, machineId, { provider: "claude_code", text: "hi" }, "other-key")
      assert.strictEqual(other.body.code, "agents_unavailable")
    }))

  it.scopedLive("provider-models lists the three agents; a missing agent answers 503 agents_unavailable", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ runtime: "sandbox", agentsDir: "/nonexistent/agents" })
      const owner = yield* server.bootstrap("models@example.com")
      const api = client(server.url, { key: owner.api_key })
      const models = yield* api("GET", "/v1/provider-models")
      assert.strictEqual(models.status, 200)
      assert.strictEqual(models.body.source, "bundled")
      assert.deepStrictEqual(models.body.providers.map((p: any) => p.provider), ["claude_code", "codex", "opencode"])
      assert.isTrue(models.body.providers.every((p: any) => p.available === false && p.models.length > 0))
      assert.include(models.body.providers[0].reasoning_efforts, "high")
      assert.isTrue(models.body.providers[2].models.every((m: any) => m.id.includes("/")))
      const machineId = yield* runningMachine(api, "bare")
      const reply = yield* prompt(api, machineId, { provider: "claude_code", text: "hi" })
      assert.strictEqual(reply.status, 503)
      assert.strictEqual(reply.body.code, "agents_unavailable")
    }))
})
