/**
 * The agents area's rows and values as the DTOs of api.md "Agents"; used by Http.ts only, which
 * knows the base URL that `events_url` is built on.
 */
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import type {
  AgentConversationDto,
  AgentEventsDto,
  AgentInputAccepted,
  AgentTurnDto,
  ProviderModelsDto
} from "./Api.js"
import type { ProviderListing } from "./Availability.js"
import type { ConversationEntry, EventsRead } from "./Conversations.js"
import type { TurnRow } from "./ConversationsRepo.js"
import type { AcceptedInput } from "./Inputs.js"
import { catalogue, publicModel } from "./providers/Catalogue.js"

/** Where a conversation's events are read (JSON with a cursor, or SSE). */
export const eventsUrl = (baseUrl: string, machineId: string, conversationId: string) =>
  `${baseUrl}/v1/machines/${machineId}/agents/events?conversation_id=${conversationId}`

export const turnDto = (baseUrl: string) => (turn: TurnRow): AgentTurnDto => ({
  turn_id: turn.id,
  conversation_id: turn.conversation_id,
  machine_id: turn.machine_id,
  status: turn.status,
  provider: turn.provider as AgentTurnDto["provider"],
  model: turn.model,
  reasoning_effort: turn.reasoning_effort as AgentTurnDto["reasoning_effort"],
  resume: turn.resume === 1,
  interrupt_requested: turn.interrupt_requested === 1,
  events_url: eventsUrl(baseUrl, turn.machine_id, turn.conversation_id),
  error_code: turn.error_code,
  exit_code: turn.exit_code,
  created_at: iso(turn.created_at),
  started_at: isoOrNull(turn.started_at),
  finished_at: isoOrNull(turn.finished_at)
})

export const conversationDto = (baseUrl: string) => (entry: ConversationEntry): AgentConversationDto => {
  const row = entry.conversation
  return {
    id: row.id,
    machine_id: row.machine_id,
    provider: row.provider as AgentConversationDto["provider"],
    status: row.status,
    turn_count: row.turn_count,
    events_url: eventsUrl(baseUrl, row.machine_id, row.id),
    latest_turn: entry.latestTurn === null ? null : turnDto(baseUrl)(entry.latestTurn),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  }
}

export const eventsDto = (baseUrl: string) => (read: EventsRead): AgentEventsDto => ({
  active: read.active,
  conversation_id: read.conversationId,
  cursor: read.cursor,
  events: read.events,
  latest_turn: read.latestTurn === null ? null : turnDto(baseUrl)(read.latestTurn)
})

export const inputAcceptedDto = (input: AcceptedInput): AgentInputAccepted => ({
  conversation_id: input.conversationId,
  turn_id: input.turnId,
  input_id: input.inputId,
  kind: input.kind,
  stopped: input.stopped
})

/** The bundled catalogue with each agent's availability here (prices stay inside svc). */
export const providerModelsDto = (listing: ReadonlyArray<ProviderListing>): ProviderModelsDto => ({
  source: "bundled",
  providers: listing.map(({ available, provider, version }) => ({
    provider: provider.key,
    available,
    version,
    steer: provider.steer,
    default_model: provider.defaultModel,
    reasoning_efforts: catalogue[provider.key].reasoningEfforts,
    models: catalogue[provider.key].models.map(publicModel)
  }))
})
