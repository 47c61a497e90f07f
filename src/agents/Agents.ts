/**
 * The agents service the handlers call (api.md "Agents", extensions.md §8): one façade over the
 * area's parts, built together because they share the event log and the running turns.
 *
 *   Prompts.ts        accepting a prompt (validation, idempotency, the committed turn)
 *   Inputs.ts         steer and interrupt of a running turn
 *   Turns.ts          launching, finishing and recovering turns; the running turns' handles
 *   EventLog.ts       the numbered, persisted events and their readers' wake-ups
 *   Conversations.ts  reading conversations and their events
 *   Availability.ts   which agents can run here
 */
import { Context, Effect, Layer } from "effect"
import { makeAvailability } from "./Availability.js"
import { makeConversations } from "./Conversations.js"
import { makeEventLog } from "./EventLog.js"
import { makeInputs } from "./Inputs.js"
import { makePrompts } from "./Prompts.js"
import { makeTurnKeys } from "./TurnKeys.js"
import { makeTurns } from "./Turns.js"

const make = Effect.gen(function*() {
  const log = yield* makeEventLog
  const turns = yield* makeTurns(log)
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

export class Agents extends Context.Tag("svc/services/Agents")<Agents, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.scoped(Agents, make)
}
