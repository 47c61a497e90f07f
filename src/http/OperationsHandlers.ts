import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Stream } from "effect"
import { Api } from "../api/Api.js"
import { ResourceNotFound } from "../api/Errors.js"
import { DomainEvents } from "../events/DomainEvents.js"
import { MachinesRepo } from "../persistence/MachinesRepo.js"
import { type EventRow, type OperationRow, OperationsRepo } from "../persistence/OperationsRepo.js"
import { HostCapacity } from "../runtime/HostCapacity.js"
import { MachineSupervisor } from "../runtime/MachineSupervisor.js"
import { currentOrganization } from "./CallerContext.js"
import { operationDto } from "./MachineDtos.js"

const notFound = new ResourceNotFound({ detail: "Operation not found" })

const sseFrame = (event: EventRow) =>
  new TextEncoder().encode(`id: ${event.id}\nevent: ${event.name}\ndata: ${event.data}\n\n`)

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
     * Persisted history after `after`, then live. Live bus events only wake the reader, which reads
     * the persisted rows again, so a reader that falls behind the bus misses nothing.
     */
    const eventStream = (operation: OperationRow, after: number) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const live = yield* bus.subscribe
        let last = after
        let ended = false
        const readMore = Effect.map(Effect.suspend(() => operations.eventsAfter(operation.id, last)), (rows) => {
          if (rows.length > 0) last = rows[rows.length - 1]!.id
          if (rows.some((row) => row.name === "end")) ended = true
          return rows
        })
        const wakeUps = Stream.fromQueue(live).pipe(
          Stream.filter((event) => event._tag === "OperationEvent" && event.operationId === operation.id)
        )
        return Stream.fromEffect(readMore).pipe(
          Stream.concat(Stream.mapEffect(wakeUps, () => readMore)),
          Stream.takeUntil(() => ended),
          Stream.flatMap((rows) => Stream.fromIterable(rows)),
          Stream.map(sseFrame)
        )
      }))

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
        Effect.map(findOperation(path.id), (operation) =>
          HttpServerResponse.stream(eventStream(operation, headers["last-event-id"] ?? 0), {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
          })))
  }))
