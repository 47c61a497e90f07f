/** The agents area: turns and conversations over their repositories (provided here only). */
import { Layer } from "effect"
import { Agents } from "./Agents.js"
import { AgentConversationsRepo } from "./ConversationsRepo.js"
import { AgentEventsRepo } from "./EventsRepo.js"

export const AgentsLive = Agents.layer.pipe(
  Layer.provide(Layer.mergeAll(AgentConversationsRepo.layer, AgentEventsRepo.layer))
)
