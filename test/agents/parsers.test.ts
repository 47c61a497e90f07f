/**
 * Each agent's JSON lines (captured from the real CLIs at the pinned versions, shortened) map to
 * the expected AgentEvents and runner signals.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Mapped } from "../../src/agents/providers/AgentProvider.js"
import { parser as claude } from "../../src/agents/providers/claude_code/ClaudeCode.js"
import { parser as codex } from "../../src/agents/providers/codex/Codex.js"
import { parser as opencode } from "../../src/agents/providers/opencode/OpenCode.js"

const run = (parse: (line: string) => ReadonlyArray<Mapped>, lines: ReadonlyArray<unknown>) =>
  lines.flatMap((line) => parse(typeof line === "string" ? line : JSON.stringify(line)))
    .filter((mapped) => mapped._tag !== "session" || mapped.id !== "")

const brief = (mapped: ReadonlyArray<Mapped>) =>
  mapped.map((m) => m._tag === "event" ? `${m.event.type}${m.event.name ? `:${m.event.name}` : ""}` : m._tag)

describe("agent stream parsers", () => {
  it("claude: tool call, tool result, message, usage with cost, replayed steer, lifecycle", () => {
    const session = "f367fdc8-c30c-4c45-900c-679b92675e63"
    const out = run(claude(), [
      { type: "system", subtype: "init", session_id: session },
      { type: "command_lifecycle", command_uuid: "in-1", state: "started", session_id: session },
      {
        type: "assistant",
        session_id: session,
        message: { content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "printf hi > f" } }] }
      },
      {
        type: "user",
        session_id: session,
        message: {
          content: [{ tool_use_id: "toolu_1", type: "tool_result", content: "(Bash completed with no output)" }]
        }
      },
      { type: "user", isReplay: true, uuid: "steer-1", session_id: session, message: { content: [] } },
      { type: "assistant", session_id: session, message: { content: [{ type: "text", text: "wrote f" }] } },
      {
        type: "result",
        subtype: "success",
        is_error: false,
        duration_ms: 340,
        session_id: session,
        total_cost_usd: 0.0024,
        usage: { input_tokens: 240, cache_read_input_tokens: 16, cache_creation_input_tokens: 0, output_tokens: 60 },
        model_usage_since_last_result: { "claude-sonnet-4-5": { costUSD: 0.0016248 } }
      },
      { type: "command_lifecycle", command_uuid: "in-1", state: "completed", session_id: session },
      "not json at all"
    ])
    const events = out.filter((m) => m._tag !== "session")
    assert.deepStrictEqual(brief(events), [
      "tool_call:Bash",
      "tool_result:Bash",
      "accepted",
      "message",
      "usage",
      "result",
      "settled"
    ])
    assert.isTrue(out.some((m) => m._tag === "session" && m.id === session))
    const usage = events.find((m) => m._tag === "event" && m.event.type === "usage")
    assert.deepStrictEqual(usage?._tag === "event" ? usage.event.usage : undefined, {
      input_tokens: 256,
      output_tokens: 60,
      cached_input_tokens: 16,
      cost_micro_usd: 1625
    })
  })

  it("claude: an interrupted run is a failed result without an error event", () => {
    const out = run(claude(), [{
      type: "result",
      subtype: "error_during_execution",
      is_error: true,
      session_id: "s",
      usage: {}
    }])
    assert.deepStrictEqual(brief(out.filter((m) => m._tag !== "session")), ["usage", "result"])
    assert.deepStrictEqual(out.at(-1), { _tag: "result", ok: false })
  })

  it("claude: a resume of a session it never wrote down is unresumable, nothing else", () => {
    const session = "11111111-2222-3333-4444-555555555555"
    const out = run(claude(), [{
      type: "result",
      subtype: "error_during_execution",
      duration_ms: 0,
      is_error: true,
      num_turns: 0,
      session_id: session,
      total_cost_usd: 0,
      usage: { input_tokens: 0, output_tokens: 0 },
      errors: [`No conversation found with session ID: ${session}`]
    }])
    assert.deepStrictEqual(out.filter((m) => m._tag !== "session"), [{ _tag: "unresumable" }])
  })

  it("codex: thread, command execution, message, usage, failure", () => {
    const out = run(codex(), [
      { type: "thread.started", thread_id: "01a20878-c401" },
      { type: "turn.started" },
      { type: "item.started", item: { id: "item_2", type: "command_execution", command: "bash -lc 'printf hi'" } },
      {
        type: "item.completed",
        item: { id: "item_2", type: "command_execution", aggregated_output: "hi", exit_code: 0, status: "completed" }
      },
      { type: "item.completed", item: { id: "item_3", type: "agent_message", text: "wrote f" } },
      { type: "turn.completed", usage: { input_tokens: 300, cached_input_tokens: 40, output_tokens: 50 } },
      { type: "turn.failed", error: { message: "boom" } }
    ])
    assert.deepStrictEqual(brief(out), [
      "session",
      "tool_call:shell",
      "tool_result:shell",
      "message",
      "usage",
      "result",
      "error",
      "result"
    ])
  })

  it("opencode: session on every line, tool use, text, step usage with cost, error", () => {
    const base = { sessionID: "ses_1", timestamp: 1 }
    const out = run(opencode(), [
      { ...base, type: "step_start", part: { type: "step-start" } },
      {
        ...base,
        type: "tool_use",
        part: { type: "tool", tool: "bash", callID: "toolu_1", state: { status: "completed", input: {}, output: "ok" } }
      },
      {
        ...base,
        type: "step_finish",
        part: {
          reason: "tool-calls",
          tokens: { input: 120, output: 30, reasoning: 0, cache: { read: 8, write: 0 } },
          cost: 0.0008
        }
      },
      { ...base, type: "text", part: { type: "text", text: "wrote f" } },
      {
        ...base,
        type: "step_finish",
        part: {
          reason: "stop",
          tokens: { input: 120, output: 30, reasoning: 0, cache: { read: 8, write: 0 } },
          cost: 0.0008
        }
      },
      { ...base, type: "error", error: { name: "APIError", data: { message: "cannot connect" } } }
    ]).filter((m) => m._tag !== "session")
    assert.deepStrictEqual(brief(out), [
      "tool_call:bash",
      "tool_result:bash",
      "usage",
      "message",
      "usage",
      "result",
      "error",
      "result"
    ])
    const usage = out.find((m) => m._tag === "event" && m.event.type === "usage")
    assert.strictEqual(usage?._tag === "event" ? usage.event.usage?.cost_micro_usd : 0, 800)
  })

  it("claude without a key: the API error's kind, not the result's 'success' subtype, names the failure", () => {
    // Captured from claude 2.1.330 with no key in its environment (shortened).
    const out = run(claude(), [
      {
        type: "assistant",
        message: { model: "<synthetic>", content: [{ type: "text", text: "Not logged in · Please run /login" }] },
        error: "authentication_failed",
        is_api_error_message: true
      },
      {
        type: "result",
        subtype: "success",
        is_error: true,
        terminal_reason: "api_error",
        num_turns: 1,
        result: "Not logged in · Please run /login"
      }
    ])
    const errors = out.flatMap((m) => m._tag === "event" && m.event.type === "error" ? [m.event.code] : [])
    assert.deepStrictEqual(errors, ["provider_auth_failed"])
    assert.deepStrictEqual(out.at(-1), { _tag: "result", ok: false })
  })

  it("claude and codex: a provider that does not answer ends the turn after a few reconnects", () => {
    // Captured from claude 2.1.330 and codex 0.169.0 with their base URL on a closed port.
    const retry = (attempt: number) => ({
      type: "system",
      subtype: "api_retry",
      attempt,
      max_retries: 10,
      retry_delay_ms: 500 * attempt,
      error_status: null,
      error: "unknown"
    })
    const fromClaude = run(claude(), [retry(1), retry(2), retry(3)])
    assert.deepStrictEqual(brief(fromClaude), ["fatal"])
    assert.strictEqual(fromClaude[0]!._tag === "fatal" && fromClaude[0]!.code, "provider_unreachable")
    const refused = run(claude(), [{ ...retry(1), error_status: 401 }])
    assert.strictEqual(refused[0]!._tag === "fatal" && refused[0]!.code, "provider_auth_failed")

    // A refused connection: codex waits for the network forever, so the first notice decides.
    const refusedConnection = {
      type: "error",
      message: "Reconnecting... waiting for network (Connection failed: error sending request)"
    }
    const fromCodex = run(codex(), [refusedConnection])
    assert.deepStrictEqual(brief(fromCodex), ["error", "fatal"])
    assert.strictEqual(fromCodex.at(-1)!._tag === "fatal" && (fromCodex.at(-1) as any).code, "provider_unreachable")
    // Numbered reconnects (a name that does not resolve) count up to the third.
    const numbered = (n: number) => ({ type: "error", message: `Reconnecting... ${n}/5 (failed to lookup address)` })
    assert.deepStrictEqual(brief(run(codex(), [numbered(1), numbered(2)])), ["error", "error"])
    assert.deepStrictEqual(
      brief(run(codex(), [numbered(1), numbered(2), numbered(3)])),
      ["error", "error", "error", "fatal"]
    )
  })
})
