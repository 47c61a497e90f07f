import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { currentOrganization, requester } from "../kernel/http/CallerContext.js"
import { eventStreamResponse } from "../kernel/http/EventStreams.js"
import { Agents, eventsPage } from "./Agents.js"
import type { AgentEvent } from "./Api.js"

/** One SSE `agent` event; its id is the cursor after it (its seq). */
const frame = (event: AgentEvent) => `id: ${event.seq}\nevent: agent\ndata: ${JSON.stringify(event)}\n\n`

export const AgentsHandlers = HttpApiBuilder.group(Api, "agents", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* Agents

    /**
     * Persisted events after `after`, then live ones (src/kernel/http/EventStreams.ts), until no turn runs
     * and every event was sent; the last one sent is then an `idle` (a stored one, or one made here
     * when the reader had seen them all already).
     */
    const events = (conversationId: string, after: number) => {
      let cursor = after
      let lastType: string | undefined
      const read = Effect.map(Effect.suspend(() => agents.readAfter(conversationId, cursor)), (read) => {
        let frames = ""
        for (const event of read.events) {
          cursor = event.seq
          lastType = event.type
          frames += frame(event)
        }
        if (read.events.length === eventsPage) return { frames, then: "more" as const }
        if (read.active) return { frames, then: "wait" as const }
        if (lastType !== "idle") frames += frame({ seq: cursor, id: `idle-${conversationId}-${cursor}`, type: "idle" })
        return { frames, then: "end" as const }
      })
      return eventStreamResponse(read, (onNews) => agents.listen(conversationId, onNews))
    }

    return handlers
      .handle("prompt", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) => agents.prompt(who, path.id, payload)))
      .handle("steer", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          agents.steer(who, path.id, payload)))
      .handle("interrupt", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          agents.interrupt(who, path.id, payload)))
      .handle("events", ({ headers, path, urlParams }) =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          if ((headers.accept ?? "").includes("text/event-stream")) {
            const conversation = yield* agents.conversationFor(organization.id, path.id, urlParams.conversation_id)
            return yield* events(conversation.id, headers["last-event-id"] ?? urlParams.cursor)
          }
          return yield* agents.events(
            organization.id,
            path.id,
            urlParams.conversation_id,
            urlParams.cursor,
            urlParams.wait_seconds
          )
        }))
      .handle("conversations", ({ path, urlParams }) =>
        Effect.flatMap(
          currentOrganization,
          (organization) =>
            agents.conversations(organization.id, path.id, urlParams.limit, urlParams.cursor ?? null)
        ))
      .handle("providerModels", () =>
        agents.providerModels)
  }))
