/**
 * The agents service the handlers call: one façade over the area's parts (docs/agents.md "Where the
 * code is"), built together because they share the event log and the running turns.
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
