/**
 * The agents routes: each calls the agents service once and turns its answer into the DTOs of
 * Dto.ts; the events route also streams a conversation's events as server-sent events.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization, requester } from "../kernel/http/CallerContext.js"
import { eventStreamResponse } from "../kernel/http/EventStreams.js"
import { mapPage } from "../kernel/http/Pagination.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { Agents } from "./Agents.js"
import { conversationDto, eventsDto, inputAcceptedDto, providerModelsDto, turnDto } from "./Dto.js"
import { eventsPage } from "./EventLog.js"
import type { AgentEvent } from "./providers/Schemas.js"

/** One SSE `agent` event; its id is the cursor after it (its seq). */
const frame = (event: AgentEvent) => `id: ${event.seq}\nevent: agent\ndata: ${JSON.stringify(event)}\n\n`

export const AgentsHandlers = HttpApiBuilder.group(Api, "agents", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* Agents
    const { baseUrl } = yield* AppConfig

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
        Effect.flatMap(requester(headers), (who) =>
          Effect.map(agents.prompt(who, path.id, payload), turnDto(baseUrl))))
      .handle("steer", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          Effect.map(agents.steer(who, path.id, payload), inputAcceptedDto)))
      .handle("interrupt", ({ headers, path, payload }) =>
        Effect.flatMap(
          requester(headers),
          (who) =>
            Effect.map(agents.interrupt(who, path.id, payload), inputAcceptedDto)
        ))
      .handle("events", ({ headers, path, urlParams }) =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          if ((headers.accept ?? "").includes("text/event-stream")) {
            const conversation = yield* agents.conversationFor(organization.id, path.id, urlParams.conversation_id)
            return yield* events(conversation.id, headers["last-event-id"] ?? urlParams.cursor)
          }
          const read = yield* agents.events(
            organization.id,
            path.id,
            urlParams.conversation_id,
            urlParams.cursor,
            urlParams.wait_seconds
          )
          return eventsDto(baseUrl)(read)
        }))
      .handle("conversations", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          const page = yield* agents.conversations(organization.id, path.id, urlParams.limit, urlParams.cursor ?? null)
          const { items, next_cursor } = mapPage(page, conversationDto(baseUrl))
          return { conversations: items, next_cursor }
        }))
      .handle("providerModels", () =>
        Effect.map(agents.providers, providerModelsDto))
  })).pipe(buildWithOnly(Authorization, AppConfig, Agents))
