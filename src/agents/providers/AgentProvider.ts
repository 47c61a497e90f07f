/**
 * The agent provider port: how one command-line agent is run inside a machine for a turn, and how
 * its JSON event stream maps onto AgentEvent (extensions.md §8). One folder per agent; the turn
 * runner (TurnRunner.ts) does the rest the same way for all of them.
 */
import type { AgentEvent, AgentProvider as ProviderKey, ReasoningEffort } from "./Schemas.js"

/** An AgentEvent before it is numbered and stamped. */
export type EventBody = Omit<AgentEvent, "seq" | "id" | "created_at" | "turn_id">

/** What one line of the agent's output means to the runner. */
export type Mapped =
  | { readonly _tag: "event"; readonly event: EventBody }
  /** The agent's own session (thread) id: kept so that the next prompt resumes it. */
  | { readonly _tag: "session"; readonly id: string }
  /** The agent took a steer input (its confirmation): becomes `input_accepted`. */
  | { readonly _tag: "accepted"; readonly inputId: string }
  /** The agent finished with an input it was given (done or cancelled). */
  | { readonly _tag: "settled"; readonly inputId: string }
  /**
   * The agent could not find the session it was asked to resume, and did nothing else: the runner
   * starts a new session for the same input (TurnRunner.ts).
   */
  | { readonly _tag: "unresumable" }
  /** The agent finished a run: `ok` false when it reported a failure. */
  | { readonly _tag: "result"; readonly ok: boolean }
  /**
   * The run cannot succeed and the agent would keep trying (no model provider reachable, keys
   * refused): the runner ends the turn `failed` with `code` at once instead of waiting it out.
   */
  | { readonly _tag: "fatal"; readonly code: string; readonly message: string }

export interface RunInput {
  /** Where the agents' tools folder is inside the machine. */
  readonly tools: string
  readonly text: string
  /** The id the runner gives this input (the prompt's or a queued steer's). */
  readonly inputId: string
  readonly model: string
  readonly effort: ReasoningEffort | null
  /** The agent's session to continue, or null for a new one. */
  readonly sessionId: string | null
}

export interface RunPlan {
  readonly argv: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /** Lines written to stdin first; with a live agent stdin stays open for steering until the turn ends. */
  readonly stdin: ReadonlyArray<string>
}

export interface AgentProviderShape {
  readonly key: ProviderKey
  /** The package `svc agents install` installs, with the version this build was tested with. */
  readonly npmPackage: string
  readonly npmVersion: string
  /** The agent's command, relative to the tools folder. */
  readonly bin: string
  readonly defaultModel: string
  /**
   * The machine environment variables that hold the model provider's key for `model`, any one of
   * which is enough; empty when svc cannot tell. A turn without one fails `provider_key_missing`.
   */
  readonly keys: (model: string) => ReadonlyArray<string>
  /**
   * `live`: a steer is written to the running agent (its stream input takes it mid-turn).
   * `queued`: the agent's non-interactive mode reads no input while it works, so a steer runs as
   * the next message of the same conversation as soon as the current run ends, as the agent's own
   * interactive mode queues a message typed while it works.
   */
  readonly steer: "live" | "queued"
  /** The agent reports its session's usage so far, not the run's: svc reports the difference. */
  readonly cumulativeUsage?: boolean | undefined
  readonly plan: (input: RunInput) => RunPlan
  /** A fresh parser for one run: one line of stdout in, what it means out. */
  readonly parser: () => (line: string) => ReadonlyArray<Mapped>
  /** For `live` agents: the stdin line carrying a steer. */
  readonly steerLine?: ((inputId: string, text: string) => string) | undefined
  /** The stdin line asking the agent to stop its turn, where it takes one; else it gets SIGINT. */
  readonly interruptLine?: ((requestId: string) => string) | undefined
}

/** The text of a tool's result or input, shortened for events (the agent keeps the full one). */
export const clip = (value: unknown, max = 16 * 1024): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? ""
  return text.length > max ? `${text.slice(0, max)}…` : text
}

/** An `error` event; its message shortened to 4 KiB. */
export const errorEvent = (code: string, message: unknown): Mapped => ({
  _tag: "event",
  event: { type: "error", code, message: clip(message, 4096) }
})

export const fatal = (code: string, message: string): Mapped => ({ _tag: "fatal", code, message: clip(message, 4096) })

/** Parses one JSON line; undefined for anything else (agents print plain lines too). */
export const jsonLine = (line: string): any => {
  const trimmed = line.trim()
  if (!trimmed.startsWith("{")) return undefined
  try {
    return JSON.parse(trimmed)
  } catch {
    return undefined
  }
}

export const micros = (usd: unknown) => typeof usd === "number" && Number.isFinite(usd) ? Math.round(usd * 1e6) : 0
export const int = (value: unknown) => typeof value === "number" && Number.isFinite(value) ? Math.round(value) : 0
