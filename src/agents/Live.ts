/** The agents area: turns and conversations over their repositories (provided here only). */
import { Effect, Layer } from "effect"
import { OpenTurns } from "../kernel/sql/IdempotencySweep.js"
import { Agents } from "./Agents.js"
import { AgentConversationsRepo } from "./ConversationsRepo.js"
import { AgentEventsRepo } from "./EventsRepo.js"

export const AgentsLive = Agents.layer.pipe(
  Layer.provide(Layer.mergeAll(AgentConversationsRepo.layer, AgentEventsRepo.layer))
)

/** The agents' answer to the idempotency sweep (kernel/sql/IdempotencySweep.ts): the open turns. */
export const OpenTurnsLive = Layer.effect(
  OpenTurns,
  Effect.map(AgentConversationsRepo, (repo) => Effect.map(repo.openTurns, (turns) => turns.map((turn) => turn.id)))
).pipe(Layer.provide(AgentConversationsRepo.layer))
