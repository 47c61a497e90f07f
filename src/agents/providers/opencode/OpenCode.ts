/**
 * `opencode`: opencode (npm `opencode-ai`) as `opencode run --format json`, whose stdout is one
 * JSON event per line (`step_start`, `text`, `reasoning`, `tool_use` with the tool's state,
 * `step_finish` with tokens and cost, `error`), each carrying the `sessionID` that `--session`
 * resumes. Models are `<model_provider>/<model>`; reasoning effort is its `--variant`.
 *
 * `opencode run` reads no input while it works, so steering is `queued`: the steer runs as the
 * session's next message once the current run ends, as opencode's interactive mode queues a
 * message sent while it works. Interrupt asks with SIGINT (Ctrl-C).
 *
 * Keys: the providers' own variables from the machine's environment (`ANTHROPIC_API_KEY`,
 * `OPENAI_API_KEY`, ...). `ANTHROPIC_BASE_URL` (without `/v1`, as claude takes it) and
 * `OPENAI_BASE_URL` (with `/v1`) there become opencode's `baseURL` of those providers.
 */
import { type AgentProviderShape, clip, errorEvent, int, jsonLine, type Mapped, micros } from "../AgentProvider.js"

/** Builds opencode's config from the machine's base URL variables, then runs it. */
const wrapper = `bin=$1; shift
providers=""
if [ -n "$ANTHROPIC_BASE_URL" ]; then
  providers="\\"anthropic\\":{\\"options\\":{\\"baseURL\\":\\"\${ANTHROPIC_BASE_URL%/}/v1\\"}}"
fi
if [ -n "$OPENAI_BASE_URL" ]; then
  providers="\${providers:+$providers,}\\"openai\\":{\\"options\\":{\\"baseURL\\":\\"\${OPENAI_BASE_URL%/}\\"}}"
fi
if [ -n "$providers" ] && [ -z "$OPENCODE_CONFIG_CONTENT" ]; then
  OPENCODE_CONFIG_CONTENT="{\\"provider\\":{$providers}}"
  export OPENCODE_CONFIG_CONTENT
fi
exec "$bin" "$@" < /dev/null`

export const parser = () => (line: string): ReadonlyArray<Mapped> => {
  const event = jsonLine(line)
  if (event === undefined) return []
  const out: Array<Mapped> = []
  if (typeof event.sessionID === "string") out.push({ _tag: "session", id: event.sessionID })
  const part = event.part ?? {}
  switch (event.type) {
    case "text":
      if (String(part.text ?? "") !== "") {
        out.push({ _tag: "event", event: { type: "message", text: String(part.text) } })
      }
      break
    case "reasoning":
      out.push({ _tag: "event", event: { type: "reasoning", text: String(part.text ?? "") } })
      break
    case "tool_use": {
      const state = part.state ?? {}
      const name = String(part.tool ?? "tool")
      out.push({ _tag: "event", event: { type: "tool_call", name, input: clip(state.input), result: part.callID } })
      if (state.status === "completed" || state.status === "error") {
        out.push({
          _tag: "event",
          event: {
            type: "tool_result",
            name,
            output: clip(state.output ?? state.error ?? ""),
            result: part.callID,
            is_error: state.status === "error"
          }
        })
      }
      break
    }
    case "step_finish": {
      const tokens = part.tokens ?? {}
      const cached = int(tokens.cache?.read)
      out.push({
        _tag: "event",
        event: {
          type: "usage",
          usage: {
            input_tokens: int(tokens.input) + cached + int(tokens.cache?.write),
            output_tokens: int(tokens.output) + int(tokens.reasoning),
            cached_input_tokens: cached,
            cost_micro_usd: micros(part.cost)
          }
        }
      })
      if (part.reason !== "tool-calls") out.push({ _tag: "result", ok: true })
      break
    }
    case "error": {
      const error = event.error ?? {}
      out.push(
        errorEvent(String(error.name ?? "agent_error"), error.data?.message ?? error.message ?? JSON.stringify(error))
      )
      out.push({ _tag: "result", ok: false })
      break
    }
  }
  return out
}

export const OpenCode: AgentProviderShape = {
  key: "opencode",
  npmPackage: "opencode-ai",
  npmVersion: "1.18.33",
  bin: "node_modules/.bin/opencode",
  defaultModel: "anthropic/claude-sonnet-4-5",
  // The model names its provider; svc knows the keys of the two it configures base URLs for.
  keys: (model) =>
    model.startsWith("anthropic/")
      ? ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"]
      : model.startsWith("openai/")
      ? ["OPENAI_API_KEY"]
      : [],
  steer: "queued",
  plan: (input) => ({
    argv: [
      "/bin/sh",
      "-c",
      wrapper,
      "opencode",
      `${input.tools}/node_modules/.bin/opencode`,
      "run",
      "--format",
      "json",
      "--auto",
      "-m",
      input.model,
      ...(input.effort === null ? [] : ["--variant", input.effort]),
      ...(input.sessionId === null ? [] : ["--session", input.sessionId]),
      "--",
      input.text
    ],
    env: { OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_MODELS_FETCH: "1" },
    stdin: []
  }),
  parser
}
