/** The agents svc runs, by provider key. */
import type { AgentProviderShape } from "./AgentProvider.js"
import { ClaudeCode } from "./claude_code/ClaudeCode.js"
import { Codex } from "./codex/Codex.js"
import { OpenCode } from "./opencode/OpenCode.js"
import type { AgentProvider } from "./Schemas.js"

export const providers: Record<AgentProvider, AgentProviderShape> = {
  claude_code: ClaudeCode,
  codex: Codex,
  opencode: OpenCode
}

export const allProviders = (): ReadonlyArray<AgentProviderShape> => Object.values(providers)
