/** The area's errors (api.md error codes). */
import { ProblemError } from "../kernel/http/Problem.js"

export class ConversationNotFound
  extends ProblemError<ConversationNotFound>()("conversation_not_found", 404, "Conversation not found")
{}
export class AgentTurnRunning
  extends ProblemError<AgentTurnRunning>()("agent_turn_running", 409, "A turn of this conversation is running")
{}
export class ProviderMismatch
  extends ProblemError<ProviderMismatch>()("provider_mismatch", 409, "The conversation belongs to another provider")
{}
export class NoActiveTurn
  extends ProblemError<NoActiveTurn>()("no_active_turn", 409, "No turn of this conversation is running")
{}
export class AgentsUnavailable
  extends ProblemError<AgentsUnavailable>()("agents_unavailable", 503, "The agent is not available on this server")
{}
