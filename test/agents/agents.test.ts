/**
 * The agents service's rules over a temporary database (the HTTP routes and the real agents are in
 * test/e2e/agents*.test.ts): idempotent prompts, steers and interrupts, one running turn per
 * conversation, the checks before a prompt is recorded, and paging conversations.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Clock, Effect, Fiber, Option, TestClock } from "effect"
import { eventually } from "../support/Machines.js"
import { tempDir } from "../support/TestServer.js"
import { agentsWith, failureOf, idle, organizationId, requester, withTables } from "./support.js"

const machineId = "0190a000-0000-7000-8000-000000000001"
const stoppedId = "0190a000-0000-7000-8000-000000000002"
const machines = [{ id: machineId, state: "running" as const }, { id: stoppedId, state: "stopped" as const }]

const prompt = (text: string, extra: { conversation_id?: string; provider?: "codex" | "claude_code" | null } = {}) => ({
  attachments: [],
  conversation_id: extra.conversation_id ?? null,
  model: null,
  provider: extra.provider === undefined ? "codex" as const : extra.provider,
  reasoning_effort: null,
  text
})

describe("agents service", () => {
  it.scoped("a prompt's Idempotency-Key answers its first turn; with another body it conflicts", () =>
    Effect.gen(function*() {
      const { agents } = yield* agentsWith(machines)
      const first = yield* agents.prompt(requester("key-1"), machineId, prompt("hello"))
      const again = yield* agents.prompt(requester("key-1"), machineId, prompt("hello"))
      assert.strictEqual(again.id, first.id)
      assert.strictEqual(again.conversation_id, first.conversation_id)
      assert.strictEqual(
        yield* failureOf(agents.prompt(requester("key-1"), machineId, prompt("something else"))),
        "idempotency_conflict"
      )
      yield* idle(agents, first.conversation_id)
      const page = yield* agents.conversations(organizationId, machineId, 50, null)
      assert.deepStrictEqual(page.items.map((entry) => entry.conversation.turn_count), [1])
      // Without a key every prompt is new.
      const other = yield* agents.prompt(requester(), machineId, prompt("hello"))
      assert.notStrictEqual(other.id, first.id)
    }))

  it.scoped("a prompt to a conversation whose turn runs answers agent_turn_running and records nothing", () =>
    Effect.gen(function*() {
      const { agents } = yield* agentsWith(machines)
      const running = yield* agents.prompt(requester(), machineId, prompt("wait for me"))
      const conversation_id = running.conversation_id
      assert.strictEqual(
        yield* failureOf(agents.prompt(requester("key-2"), machineId, prompt("more", { conversation_id }))),
        "agent_turn_running"
      )
      const page = yield* agents.conversations(organizationId, machineId, 50, null)
      assert.deepStrictEqual(
        page.items.map((entry) => [entry.conversation.turn_count, entry.latestTurn?.id]),
        [[1, running.id]]
      )
      // The key was not recorded: once the turn ended, the same request is a new turn.
      yield* agents.interrupt(requester(), machineId, { conversation_id, force: true })
      yield* idle(agents, conversation_id)
      const next = yield* agents.prompt(requester("key-2"), machineId, prompt("more", { conversation_id }))
      assert.notStrictEqual(next.id, running.id)
      assert.strictEqual(next.resume, 1)
    }))

  it.scoped("steer and interrupt need a running turn: no_active_turn, conversation_not_found", () =>
    Effect.gen(function*() {
      const { agents } = yield* agentsWith(machines)
      const turn = yield* agents.prompt(requester(), machineId, prompt("hello"))
      const conversation_id = turn.conversation_id
      const events = yield* idle(agents, conversation_id)
      assert.deepStrictEqual(events.map((event) => event.type), [
        "turn_started",
        "message",
        "usage",
        "turn_finished",
        "idle"
      ])
      assert.strictEqual(
        yield* failureOf(agents.steer(requester(), machineId, { conversation_id, text: "and?" })),
        "no_active_turn"
      )
      assert.strictEqual(
        yield* failureOf(agents.interrupt(requester(), machineId, { conversation_id, force: false })),
        "no_active_turn"
      )
      const unknown = "0190a000-0000-7000-8000-0000000000ff"
      assert.strictEqual(
        yield* failureOf(agents.steer(requester(), machineId, { conversation_id: unknown, text: "x" })),
        "conversation_not_found"
      )
      assert.strictEqual(
        yield* failureOf(agents.interrupt(requester(), stoppedId, { conversation_id, force: false })),
        "machine_not_running"
      )
    }))

  it.scoped("a steer's and an interrupt's Idempotency-Key answer their first input; a forced interrupt ends the turn", () =>
    Effect.gen(function*() {
      const { agents } = yield* agentsWith(machines)
      const turn = yield* agents.prompt(requester(), machineId, prompt("wait for me"))
      const conversation_id = turn.conversation_id
      const steer = yield* agents.steer(requester("steer-1"), machineId, { conversation_id, text: "and?" })
      assert.deepStrictEqual(
        yield* agents.steer(requester("steer-1"), machineId, { conversation_id, text: "and?" }),
        steer
      )
      assert.strictEqual(
        yield* failureOf(agents.steer(requester("steer-1"), machineId, { conversation_id, text: "other" })),
        "idempotency_conflict"
      )
      const stop = yield* agents.interrupt(requester("stop-1"), machineId, { conversation_id, force: true })
      assert.deepStrictEqual([stop.turnId, stop.kind, stop.stopped], [turn.id, "interrupt", true])
      const events = yield* idle(agents, conversation_id)
      assert.strictEqual(events.find((event) => event.type === "turn_finished")?.outcome, "interrupted")
      // Replayed after the turn ended: the same input, and it says the turn has stopped.
      assert.deepStrictEqual(
        yield* agents.interrupt(requester("stop-1"), machineId, { conversation_id, force: true }),
        stop
      )
    }))

  it.scoped("a prompt is checked before anything is recorded", () =>
    Effect.gen(function*() {
      const { agents } = yield* agentsWith(machines)
      assert.strictEqual(yield* failureOf(agents.prompt(requester(), machineId, prompt(""))), "invalid_request")
      assert.strictEqual(
        yield* failureOf(agents.prompt(requester(), machineId, prompt("hi", { provider: null }))),
        "invalid_request"
      )
      assert.strictEqual(
        yield* failureOf(agents.prompt(requester(), machineId, prompt("hi", { provider: "claude_code" }))),
        "agents_unavailable"
      )
      assert.strictEqual(yield* failureOf(agents.prompt(requester(), stoppedId, prompt("hi"))), "machine_not_running")
      const big = { name: "big.bin", data_base64: "A".repeat(16 * 1024 * 1024 * 4 / 3 + 4) }
      assert.strictEqual(
        yield* failureOf(agents.prompt(requester(), machineId, { ...prompt("hi"), attachments: [big] })),
        "body_too_large"
      )
      assert.deepStrictEqual((yield* agents.conversations(organizationId, machineId, 50, null)).items, [])
      // A conversation keeps its provider.
      const turn = yield* agents.prompt(requester(), machineId, prompt("hello"))
      yield* idle(agents, turn.conversation_id)
      assert.strictEqual(
        yield* failureOf(
          agents.prompt(
            requester(),
            machineId,
            prompt("hi", { conversation_id: turn.conversation_id, provider: "claude_code" })
          )
        ),
        "provider_mismatch"
      )
    }))

  it.scoped("conversations page oldest first with a cursor, each with its latest turn", () =>
    Effect.gen(function*() {
      const { agents } = yield* agentsWith(machines)
      const turns = []
      for (const text of ["one", "two", "three"]) {
        const turn = yield* agents.prompt(requester(), machineId, prompt(text))
        yield* idle(agents, turn.conversation_id)
        turns.push(turn)
        yield* TestClock.adjust("1 second")
      }
      const first = yield* agents.conversations(organizationId, machineId, 2, null)
      assert.deepStrictEqual(
        first.items.map((entry) => [entry.conversation.id, entry.latestTurn?.id, entry.latestTurn?.status]),
        [[turns[0]!.conversation_id, turns[0]!.id, "completed"], [turns[1]!.conversation_id, turns[1]!.id, "completed"]]
      )
      assert.strictEqual(first.next_cursor, turns[1]!.conversation_id)
      const second = yield* agents.conversations(organizationId, machineId, 2, first.next_cursor!.toUpperCase())
      assert.deepStrictEqual(second.items.map((entry) => entry.conversation.id), [turns[2]!.conversation_id])
      assert.isNull(second.next_cursor)
      assert.strictEqual(
        yield* failureOf(agents.conversations("another-org", machineId, 2, null)),
        "resource_not_found"
      )
    }))

  it.scoped("an events read with wait_seconds waits by the Clock, and answers at once when news comes", () =>
    Effect.gen(function*() {
      const { agents } = yield* agentsWith(machines)
      // The stand-in prints no event while it waits: `turn_started` is all there is.
      const turn = yield* agents.prompt(requester(), machineId, prompt("wait for me"))
      const conversation_id = turn.conversation_id
      const cursor = (yield* agents.readAfter(conversation_id, 0)).events.at(-1)!.seq
      /** A read that has started to wait `seconds` on the TestClock. */
      const waiting = (seconds: number) =>
        Effect.gen(function*() {
          const read = yield* Effect.fork(agents.events(organizationId, machineId, conversation_id, cursor, seconds))
          const until = (yield* Clock.currentTimeMillis) + seconds * 1000
          yield* eventually(Effect.map(TestClock.sleeps(), (sleeps) => Chunk.contains(sleeps, until) || undefined))
          return read
        })
      const quiet = yield* waiting(5)
      yield* TestClock.adjust("4 seconds")
      assert.isTrue(Option.isNone(yield* Fiber.poll(quiet)))
      yield* TestClock.adjust("1 second")
      const empty = yield* Fiber.join(quiet)
      assert.deepStrictEqual([empty.active, empty.cursor, empty.events.length], [true, cursor, 0])
      assert.strictEqual(empty.latestTurn?.id, turn.id)
      const news = yield* waiting(30)
      yield* agents.interrupt(requester(), machineId, { conversation_id, force: true })
      const answer = yield* Fiber.join(news)
      assert.isAbove(answer.cursor, cursor)
      assert.strictEqual(answer.events[0]?.seq, cursor + 1)
    }))

  it.scoped("a turn an earlier process left open is failed with server_restarted when the service starts", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // As a crash leaves it: the conversation running, its turn too, no turn_finished.
      const ids = { conversation: "0190a000-0000-7000-8000-0000000000c1", turn: "0190a000-0000-7000-8000-0000000000d1" }
      yield* withTables(dir, (repo) =>
        Effect.zipRight(
          repo.insertConversation({
            id: ids.conversation,
            organization_id: organizationId,
            machine_id: machineId,
            provider: "codex",
            session_id: "thread-1",
            usage_totals: null,
            status: "running",
            turn_count: 1,
            latest_turn_id: ids.turn,
            created_at: 0,
            updated_at: 0
          }),
          repo.insertTurn({
            id: ids.turn,
            conversation_id: ids.conversation,
            organization_id: organizationId,
            machine_id: machineId,
            status: "running",
            provider: "codex",
            model: "gpt-5",
            reasoning_effort: null,
            resume: 0,
            interrupt_requested: 0,
            error_code: null,
            exit_code: null,
            created_at: 0,
            started_at: 0,
            finished_at: null
          })
        ))
      const { agents } = yield* agentsWith(machines, dir)
      const read = yield* agents.events(organizationId, machineId, ids.conversation, 0, 0)
      assert.deepStrictEqual(
        read.events.map((event) => [event.type, event.code]),
        [["turn_finished", "server_restarted"], ["idle", undefined]]
      )
      assert.deepStrictEqual(
        [read.active, read.latestTurn?.status, read.latestTurn?.error_code],
        [false, "failed", "server_restarted"]
      )
      // The conversation takes prompts again.
      const next = yield* agents.prompt(requester(), machineId, prompt("hello", { conversation_id: ids.conversation }))
      assert.strictEqual(next.resume, 1)
    }))
})
