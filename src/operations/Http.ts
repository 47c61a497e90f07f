/** Operations over HTTP: thin, the rules are in Operations.ts. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization } from "../kernel/http/CallerContext.js"
import { eventStreamResponse } from "../kernel/http/EventStreams.js"
import { mapPage } from "../kernel/http/Pagination.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { type EventRow, type OperationRow, terminalStatuses } from "../runtime/OperationsRepo.js"
import { operationDto } from "./Dto.js"
import { Operations } from "./Operations.js"

const sseFrame = (event: EventRow) => `id: ${event.id}\nevent: ${event.name}\ndata: ${event.data}\n\n`

export const OperationsHandlers = HttpApiBuilder.group(Api, "operations", (handlers) =>
  Effect.gen(function*() {
    const operations = yield* Operations
    const toDto = operationDto(operations.positionOf)
    const organizationId = Effect.map(currentOrganization, (organization) => organization.id)

    /**
     * Persisted history after `after`, then live (kernel/http/EventStreams.ts). A wake-up of this
     * operation only makes the reader read the persisted rows again, so it misses nothing.
     * `end` is committed with the terminal status: when the row read first was terminal, the
     * first read holds all that is left (nothing, for a reader that resumes after `end`).
     */
    const events = (operation: OperationRow, after: number) => {
      const settled = terminalStatuses.includes(operation.status)
      let last = after
      const read = Effect.map(Effect.suspend(() => operations.eventsAfter(operation.id, last)), (rows) => {
        let frames = ""
        let ended = false
        for (const row of rows) {
          frames += sseFrame(row)
          if (row.name === "end") ended = true
        }
        if (rows.length > 0) last = rows[rows.length - 1]!.id
        return { frames, then: ended || settled ? "end" as const : "wait" as const }
      })
      return eventStreamResponse(read, (onNews) => operations.listen(operation.id, onNews))
    }

    return handlers
      .handle("get", ({ path }) =>
        Effect.map(Effect.flatMap(organizationId, (org) => operations.find(org, path.id)), toDto))
      .handle("listForMachine", ({ path, urlParams }) =>
        Effect.flatMap(organizationId, (org) =>
          Effect.map(
            operations.pageForMachine(org, path.id, urlParams.limit, urlParams.cursor ?? null),
            (page) =>
              mapPage(page, toDto)
          )))
      .handle("cancel", ({ path }) =>
        Effect.map(
          Effect.flatMap(organizationId, (org) => operations.cancel(org, path.id)),
          toDto
        ))
      .handle("events", ({ headers, path }) =>
        Effect.flatMap(
          Effect.flatMap(organizationId, (org) => operations.find(org, path.id)),
          (operation) => events(operation, headers["last-event-id"] ?? 0)
        ))
  })).pipe(buildWithOnly(Authorization, Operations))
