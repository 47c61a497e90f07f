/**
 * The providers' vocabulary, Schema first (types derived): which agents there are, the reasoning
 * efforts, and the AgentEvent every agent's output is mapped to. Kernel: the agents API reuses them.
 */
import { Schema } from "effect"
import { Timestamp } from "../../kernel/http/Dto.js"

export const AgentProvider = Schema.Literal("claude_code", "codex", "opencode")
export type AgentProvider = typeof AgentProvider.Type
export const ReasoningEffort = Schema.Literal("minimal", "low", "medium", "high")
export type ReasoningEffort = typeof ReasoningEffort.Type

export const AgentUsage = Schema.Struct({
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  cached_input_tokens: Schema.Int,
  cost_micro_usd: Schema.Int
})
export type AgentUsage = typeof AgentUsage.Type

const optionalString = Schema.optional(Schema.NullOr(Schema.String))

export const AgentEvent = Schema.Struct({
  seq: Schema.Int,
  id: Schema.String,
  type: Schema.Literal(
    "turn_started",
    "input_accepted",
    "message",
    "reasoning",
    "tool_call",
    "tool_result",
    "usage",
    "error",
    "turn_finished",
    "idle"
  ),
  kind: Schema.optional(Schema.Literal("prompt", "steer", "interrupt")),
  turn_id: optionalString,
  input_id: optionalString,
  session_id: optionalString,
  provider: optionalString,
  model: optionalString,
  reasoning_effort: optionalString,
  name: optionalString,
  text: optionalString,
  input: optionalString,
  output: optionalString,
  result: optionalString,
  message: optionalString,
  code: optionalString,
  outcome: Schema.optional(Schema.Literal("completed", "interrupted", "failed")),
  is_error: Schema.optional(Schema.Boolean),
  restarted: Schema.optional(Schema.Boolean),
  resumed: Schema.optional(Schema.Boolean),
  time_ms: Schema.optional(Schema.Int),
  usage: Schema.optional(AgentUsage),
  created_at: Schema.optional(Timestamp)
}).annotations({ identifier: "AgentEvent" })
export type AgentEvent = typeof AgentEvent.Type
