/**
 * `codex`: OpenAI Codex CLI (npm `@openai/codex`) as `codex exec --json`, whose stdout is one JSON
 * event per line (`thread.started`, `turn.started`, `item.started` / `item.completed` with
 * `agent_message`, `reasoning`, `command_execution`, `file_change`, `mcp_tool_call`, `web_search`
 * and `error` items, `turn.completed` with usage, `turn.failed`, `error`). A resumed conversation
 * runs `codex exec resume <thread id>`. Its usage totals are the thread's so far, so svc reports
 * the difference from the previous run's.
 *
 * `codex exec` reads no input while it works, so steering is `queued` (what codex's own
 * interactive mode does with a message typed during a turn): it runs as the next message of the
 * thread once the current run ends. Interrupt asks with SIGINT, as Ctrl-C in its terminal does.
 *
 * Keys: `OPENAI_API_KEY` (or `CODEX_API_KEY`) from the machine's environment. With
 * `OPENAI_BASE_URL` set there, codex talks to that Responses endpoint as a custom model provider
 * keyed by `OPENAI_API_KEY` (codex itself ignores the variable): over HTTP streaming only, without
 * WebSockets. Codex reports no cost: svc prices the tokens with the bundled catalogue.
 */
import { type AgentProviderShape, clip, errorEvent, fatal, int, jsonLine, type Mapped } from "../AgentProvider.js"

/** Runs codex, through a custom provider when the machine names an OpenAI-compatible base URL. */
const wrapper = `bin=$1; shift
if [ -n "$OPENAI_BASE_URL" ]; then
  exec "$bin" -c model_provider=svc_openai -c model_providers.svc_openai.name=openai-compatible \\
    -c "model_providers.svc_openai.base_url=\\"$OPENAI_BASE_URL\\"" \\
    -c model_providers.svc_openai.env_key=OPENAI_API_KEY \\
    -c model_providers.svc_openai.wire_api=responses -c model_providers.svc_openai.supports_websockets=false "$@"
fi
exec "$bin" "$@"`

/**
 * When codex's reconnect notices mean its provider cannot be reached: "waiting for network" comes
 * after a refused connection and repeats forever, slower each time (first after about 3 s); a
 * numbered one ("Reconnecting... 2/5") counts up to codex's own limit.
 */
export const unreachableAfter = 3
const unreachable = (message: string, notices: number) =>
  /^Reconnecting\.\.\. waiting for network/.test(message) ||
  (/^Reconnecting\.\.\./.test(message) && notices >= unreachableAfter)

export const parser = () => {
  let reconnects = 0
  return (line: string): ReadonlyArray<Mapped> => {
    const event = jsonLine(line)
    if (event === undefined) return []
    const item = event.item ?? {}
    switch (event.type) {
      case "thread.started":
        return typeof event.thread_id === "string" ? [{ _tag: "session", id: event.thread_id }] : []
      case "item.started":
        switch (item.type) {
          case "command_execution":
            return [{
              _tag: "event",
              event: { type: "tool_call", name: "shell", input: clip(item.command), result: item.id }
            }]
          case "mcp_tool_call":
            return [{
              _tag: "event",
              event: {
                type: "tool_call",
                name: `${item.server}.${item.tool}`,
                input: clip(item.arguments),
                result: item.id
              }
            }]
          default:
            return []
        }
      case "item.completed":
        switch (item.type) {
          case "agent_message":
            return [{ _tag: "event", event: { type: "message", text: String(item.text ?? "") } }]
          case "reasoning":
            return [{ _tag: "event", event: { type: "reasoning", text: String(item.text ?? "") } }]
          case "command_execution":
            return [{
              _tag: "event",
              event: {
                type: "tool_result",
                name: "shell",
                output: clip(item.aggregated_output ?? ""),
                result: item.id,
                is_error: item.status === "failed" || (typeof item.exit_code === "number" && item.exit_code !== 0)
              }
            }]
          case "file_change":
            return [
              {
                _tag: "event",
                event: { type: "tool_call", name: "file_change", input: clip(item.changes), result: item.id }
              },
              {
                _tag: "event",
                event: {
                  type: "tool_result",
                  name: "file_change",
                  output: String(item.status ?? ""),
                  result: item.id,
                  is_error: item.status === "failed"
                }
              }
            ]
          case "mcp_tool_call":
            return [{
              _tag: "event",
              event: {
                type: "tool_result",
                name: `${item.server}.${item.tool}`,
                output: clip(item.result ?? item.error ?? ""),
                result: item.id,
                is_error: item.status === "failed"
              }
            }]
          case "web_search":
            return [{
              _tag: "event",
              event: { type: "tool_call", name: "web_search", input: clip(item.query), result: item.id }
            }]
          case "error":
            return [errorEvent("agent_warning", item.message)]
          default:
            return []
        }
      case "turn.completed": {
        const usage = event.usage ?? {}
        return [
          {
            _tag: "event",
            event: {
              type: "usage",
              usage: {
                input_tokens: int(usage.input_tokens),
                output_tokens: int(usage.output_tokens),
                cached_input_tokens: int(usage.cached_input_tokens),
                cost_micro_usd: 0
              }
            }
          },
          { _tag: "result", ok: true }
        ]
      }
      case "turn.failed":
        return [
          errorEvent("turn_failed", event.error?.message ?? ""),
          { _tag: "result", ok: false }
        ]
      case "error": {
        const message = String(event.message ?? "")
        const reported = errorEvent("agent_error", message)
        if (/^Reconnecting\.\.\./.test(message) && unreachable(message, ++reconnects)) {
          return [reported, fatal("provider_unreachable", `The model provider could not be reached: ${message}`)]
        }
        return [reported]
      }
      default:
        return []
    }
  }
}

export const Codex: AgentProviderShape = {
  key: "codex",
  npmPackage: "@openai/codex",
  npmVersion: "0.169.0",
  bin: "node_modules/.bin/codex",
  defaultModel: "gpt-5-codex",
  keys: () => ["OPENAI_API_KEY", "CODEX_API_KEY"],
  steer: "queued",
  cumulativeUsage: true,
  plan: (input) => ({
    argv: [
      "/bin/sh",
      "-c",
      wrapper,
      "codex",
      `${input.tools}/node_modules/.bin/codex`,
      "exec",
      "--json",
      "--skip-git-repo-check",
      "--dangerously-bypass-approvals-and-sandbox",
      "-m",
      input.model,
      ...(input.effort === null ? [] : ["-c", `model_reasoning_effort=${input.effort}`]),
      ...(input.sessionId === null ? ["--", input.text] : ["resume", input.sessionId, "--", input.text])
    ],
    env: {},
    stdin: []
  }),
  parser
}
