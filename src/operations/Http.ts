import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { DomainEvents } from "../kernel/events/DomainEvents.js"
import { currentOrganization } from "../kernel/http/CallerContext.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { eventStreamResponse } from "../kernel/http/EventStreams.js"
import { operationDto } from "../machines/Dto.js"
import { HostCapacity } from "../runtime/HostCapacity.js"
import { MachinesRepo } from "../runtime/MachinesRepo.js"
import { MachineSupervisor } from "../runtime/MachineSupervisor.js"
import { type EventRow, type OperationRow, OperationsRepo, terminalStatuses } from "../runtime/OperationsRepo.js"

const notFound = new ResourceNotFound({ detail: "Operation not found" })

const sseFrame = (event: EventRow) => `id: ${event.id}\nevent: ${event.name}\ndata: ${event.data}\n\n`

export const OperationsHandlers = HttpApiBuilder.group(Api, "operations", (handlers) =>
  Effect.gen(function*() {
    const operations = yield* OperationsRepo
    const machines = yield* MachinesRepo
    const supervisor = yield* MachineSupervisor
    const bus = yield* DomainEvents
    const toDto = operationDto((yield* HostCapacity).positionOf)

    const findOperation = (id: string) =>
      Effect.gen(function*() {
        const organization = yield* currentOrganization
        const found = yield* operations.findIn(organization.id, id)
        return yield* Option.match(found, { onNone: () => Effect.fail(notFound), onSome: Effect.succeed })
      })

    /**
     * Persisted history after `after`, then live (src/http/EventStreams.ts). A wake-up of this
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
      return eventStreamResponse(read, (onNews) => bus.listenOperation(operation.id, onNews))
    }

    return handlers
      .handle("get", ({ path }) => Effect.map(findOperation(path.id), toDto))
      .handle("listForMachine", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          if (Option.isNone(yield* machines.findIn(organization.id, path.id))) {
            return yield* new ResourceNotFound({ detail: "Machine not found" })
          }
          const before = urlParams.cursor === undefined ? null : Number(urlParams.cursor)
          const rows = yield* operations.pageForMachine(path.id, {
            limit: urlParams.limit + 1,
            before: Number.isFinite(before) ? before : null
          })
          const page = rows.slice(0, urlParams.limit)
          return {
            items: page.map(toDto),
            next_cursor: rows.length > urlParams.limit ? String(page[page.length - 1]!.seq) : null
          }
        }))
      .handle("cancel", ({ path }) =>
        Effect.gen(function*() {
          const operation = yield* findOperation(path.id)
          yield* supervisor.cancel(operation)
          const now = yield* operations.find(operation.id)
          return toDto(Option.getOrElse(now, () => operation))
        }))
      .handle("events", ({ headers, path }) =>
        Effect.flatMap(findOperation(path.id), (operation) =>
          events(operation, headers["last-event-id"] ?? 0)))
  }))
