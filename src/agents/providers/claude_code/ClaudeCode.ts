/**
 * `claude_code`: Claude Code (npm `@anthropic-ai/claude-code`) as `claude -p` with streaming JSON
 * in and out (`--input-format stream-json --output-format stream-json --verbose`). The prompt is a
 * user message on stdin carrying our input id as its `uuid`; `--replay-user-messages` echoes each
 * user message back, which is the agent's confirmation of a steer; `command_lifecycle` lines say
 * when an input is done, and stdin is closed once none is left, which ends the process. Interrupt
 * is the stream's own `control_request` `interrupt`.
 *
 * Keys: `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`) and optionally `ANTHROPIC_BASE_URL` from
 * the machine's environment, read by claude itself. `IS_SANDBOX=1` lets it skip permission prompts
 * as root: the machine is the sandbox.
 */
import {
  type AgentProviderShape,
  clip,
  errorEvent,
  fatal,
  int,
  jsonLine,
  type Mapped,
  micros
} from "../AgentProvider.js"

const effortOf = { minimal: "low", low: "low", medium: "medium", high: "high" } as const

const userLine = (inputId: string, text: string) =>
  JSON.stringify({
    type: "user",
    uuid: inputId,
    session_id: "",
    parent_tool_use_id: null,
    message: { role: "user", content: [{ type: "text", text }] }
  })

const textOfContent = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((part: any) => (typeof part?.text === "string" ? part.text : "")).join("")
    : ""

/** Connection-level retries (no HTTP answer) after which the provider counts as unreachable. */
export const unreachableAfter = 3

export const parser = () => {
  const toolNames = new Map<string, string>()
  // claude marks an assistant message it made up from an API failure with the failure's kind.
  let apiError: string | undefined
  return (line: string): ReadonlyArray<Mapped> => {
    const message = jsonLine(line)
    if (message === undefined) return []
    const out: Array<Mapped> = []
    if (typeof message.session_id === "string" && message.session_id !== "") {
      out.push({ _tag: "session", id: message.session_id })
    }
    switch (message.type) {
      case "system": {
        // claude retries a failing API call up to ten times with growing waits (minutes in all).
        if (message.subtype !== "api_retry") break
        if (message.error_status === 401 || message.error_status === 403) {
          out.push(fatal("provider_auth_failed", `The model provider refused the key (HTTP ${message.error_status})`))
        } else if (message.error_status === null && int(message.attempt) >= unreachableAfter) {
          out.push(
            fatal("provider_unreachable", `The model provider could not be reached (${message.error ?? "no answer"})`)
          )
        }
        break
      }
      case "assistant": {
        if (message.is_api_error_message === true && typeof message.error === "string") apiError = message.error
        for (const part of message.message?.content ?? []) {
          if (part?.type === "text" && part.text !== "") {
            out.push({ _tag: "event", event: { type: "message", text: part.text } })
          } else if (part?.type === "thinking") {
            out.push({ _tag: "event", event: { type: "reasoning", text: String(part.thinking ?? "") } })
          } else if (part?.type === "tool_use") {
            toolNames.set(String(part.id), String(part.name))
            out.push({
              _tag: "event",
              event: { type: "tool_call", name: String(part.name), input: clip(part.input), result: String(part.id) }
            })
          }
        }
        break
      }
      case "user": {
        if (message.isReplay === true && typeof message.uuid === "string") {
          out.push({ _tag: "accepted", inputId: message.uuid })
          break
        }
        for (const part of Array.isArray(message.message?.content) ? message.message.content : []) {
          if (part?.type !== "tool_result") continue
          out.push({
            _tag: "event",
            event: {
              type: "tool_result",
              name: toolNames.get(String(part.tool_use_id)) ?? null,
              output: clip(textOfContent(part.content)),
              result: String(part.tool_use_id),
              is_error: part.is_error === true
            }
          })
        }
        break
      }
      case "command_lifecycle": {
        if (["completed", "cancelled", "failed"].includes(message.state) && typeof message.command_uuid === "string") {
          out.push({ _tag: "settled", inputId: message.command_uuid })
        }
        break
      }
      case "result": {
        // A resume of a session claude never wrote down (its first turn ended before claude kept
        // the transcript): it did nothing, and says so.
        const errors: Array<unknown> = Array.isArray(message.errors) ? message.errors : []
        if (
          message.is_error === true && message.num_turns === 0 &&
          errors.some((error) => /^No conversation found with session ID/.test(String(error)))
        ) {
          out.push({ _tag: "unresumable" })
          break
        }
        const usage = message.usage ?? {}
        const since = message.model_usage_since_last_result as Record<string, { costUSD?: number }> | undefined
        const cost = since === undefined
          ? micros(message.total_cost_usd)
          : Object.values(since).reduce((sum, model) => sum + micros(model.costUSD), 0)
        const cached = int(usage.cache_read_input_tokens)
        out.push({
          _tag: "event",
          event: {
            type: "usage",
            time_ms: int(message.duration_ms),
            usage: {
              input_tokens: int(usage.input_tokens) + int(usage.cache_creation_input_tokens) + cached,
              output_tokens: int(usage.output_tokens),
              cached_input_tokens: cached,
              cost_micro_usd: cost
            }
          }
        })
        const ok = message.subtype === "success" && message.is_error !== true
        if (!ok && message.terminal_reason !== "aborted_streaming" && message.subtype !== "error_during_execution") {
          // A failed result still says subtype "success"; the assistant's API error says what failed.
          const code = apiError === "authentication_failed"
            ? "provider_auth_failed"
            : apiError ??
              (message.subtype === "success"
                ? String(message.terminal_reason ?? "agent_failed")
                : String(message.subtype ?? "error"))
          out.push(errorEvent(code, message.result ?? (message.errors ?? []).join("; ")))
        }
        out.push({ _tag: "result", ok })
        break
      }
    }
    return out
  }
}

export const ClaudeCode: AgentProviderShape = {
  key: "claude_code",
  npmPackage: "@anthropic-ai/claude-code",
  npmVersion: "2.1.330",
  bin: "node_modules/.bin/claude",
  defaultModel: "claude-sonnet-4-5",
  keys: () => ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
  steer: "live",
  plan: (input) => ({
    argv: [
      `${input.tools}/node_modules/.bin/claude`,
      "-p",
      "--input-format",
      "stream-json",
      "--output-format",
      "stream-json",
      "--verbose",
      "--replay-user-messages",
      "--permission-mode",
      "bypassPermissions",
      "--model",
      input.model,
      ...(input.effort === null ? [] : ["--effort", effortOf[input.effort]]),
      ...(input.sessionId === null ? [] : ["--resume", input.sessionId])
    ],
    env: { IS_SANDBOX: "1", DISABLE_AUTOUPDATER: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1" },
    stdin: [userLine(input.inputId, input.text)]
  }),
  parser,
  steerLine: userLine,
  interruptLine: (requestId) =>
    JSON.stringify({ type: "control_request", request_id: requestId, request: { subtype: "interrupt" } })
}
