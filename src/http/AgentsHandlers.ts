import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import type { AgentEvent } from "../api/AgentsApi.js"
import { Api } from "../api/Api.js"
import { Agents, eventsPage } from "../services/Agents.js"

import { currentOrganization, requester } from "./CallerContext.js"

const encoder = new TextEncoder()
/** One SSE `agent` event; its id is the cursor after it (its seq). */
const frame = (event: AgentEvent) =>
  encoder.encode(`id: ${event.seq}\nevent: agent\ndata: ${JSON.stringify(event)}\n\n`)

export const AgentsHandlers = HttpApiBuilder.group(Api, "agents", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* Agents

    /**
     * Persisted events after `after`, then live ones (wake-ups only make it read the database again),
     * until no turn runs and every event was sent; the last one sent is then an `idle` (a stored one,
     * or one made here when the reader had seen them all already).
     */
    const eventStream = (conversationId: string, after: number) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const live = yield* agents.subscribe
        let cursor = after
        let lastType: string | undefined
        let ended = false
        const readMore = Effect.map(Effect.suspend(() => agents.readAfter(conversationId, cursor)), (read) => {
          const frames = read.events.map((event) => {
            cursor = event.seq
            lastType = event.type
            return frame(event)
          })
          if (!read.active && read.events.length < eventsPage) {
            ended = true
            if (lastType !== "idle") {
              frames.push(frame({ seq: cursor, id: `idle-${conversationId}-${cursor}`, type: "idle" }))
            }
          }
          return frames
        })
        const wakeUps = Stream.fromQueue(live).pipe(Stream.filter((id) => id === conversationId))
        return Stream.fromEffect(readMore).pipe(
          Stream.concat(Stream.mapEffect(wakeUps, () => readMore)),
          Stream.takeUntil(() => ended),
          Stream.flatMap((frames) => Stream.fromIterable(frames))
        )
      }))

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
            return HttpServerResponse.stream(
              eventStream(conversation.id, headers["last-event-id"] ?? urlParams.cursor),
              {
                contentType: "text/event-stream",
                headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
              }
            )
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
