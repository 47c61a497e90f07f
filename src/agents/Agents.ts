/**
 * The agents service the handlers call: one façade over the area's parts (docs/agents.md "Where the
 * code is"), built together because they share the event log and the running turns.
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import type { DomainEvent } from "../kernel/events/DomainEvents.js"
import { makeAvailability } from "./Availability.js"
import { makeConversations } from "./Conversations.js"
import type { TurnRow } from "./ConversationsRepo.js"
import { turnDto } from "./Dto.js"
import { makeEventLog } from "./EventLog.js"
import { makeInputs } from "./Inputs.js"
import { makePrompts } from "./Prompts.js"
import { makeTurnKeys } from "./TurnKeys.js"
import { makeTurns } from "./Turns.js"

/** A finished turn as its `agent.turn_finished` event: `data` is the AgentTurnDto (extensions §20). */
const finishedEvent = (baseUrl: string) => {
  const toTurn = turnDto(baseUrl)
  return (row: TurnRow): DomainEvent => ({
    _tag: "ResourceSettled",
    type: "agent.turn_finished",
    data: toTurn(row),
    machineId: row.machine_id,
    operationId: null,
    organizationId: row.organization_id
  })
}

const make = Effect.gen(function*() {
  const log = yield* makeEventLog
  const turns = yield* makeTurns(log, finishedEvent((yield* AppConfig).baseUrl))
  const conversations = yield* makeConversations(log)
  const availability = yield* makeAvailability
  const keys = yield* makeTurnKeys
  const prompt = yield* makePrompts({ log, turns, conversations, availability, keys })
  const inputs = yield* makeInputs({ turns, conversations, keys })
  return {
    prompt,
    steer: inputs.steer,
    interrupt: inputs.interrupt,
    events: conversations.events,
    /** The conversation, checked, for the SSE route. */
    conversationFor: conversations.findIn,
    readAfter: conversations.readAfter,
    /** Calls back at each event of the conversation (readers read the database again). */
    listen: log.listen,
    conversations: conversations.page,
    providers: availability.listing
  }
})

export class Agents extends Context.Tag("svc/agents/Agents")<Agents, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.scoped(Agents, make)
}
