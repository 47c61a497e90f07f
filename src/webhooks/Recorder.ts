/**
 * The webhooks' outbox recorder (src/kernel/events/EventRecorders.ts): inside the transaction that
 * records machine, operation, snapshot and agent turn events, one delivery row per endpoint of the organization that
 * follows the event's type, enabled or not (a disabled endpoint's deliveries wait for it). The body
 * is built now, from the rows as the transaction sees them: `data` is the resource (extensions.md
 * §20), and every attempt sends these bytes under the event's id.
 */
import { Effect, Option } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import type { DomainEvent } from "../kernel/events/DomainEvents.js"
import { eachEvent, recordable } from "../kernel/events/EventRecorders.js"
import { OutboxMarks } from "../kernel/events/OutboxMarks.js"
import { iso } from "../kernel/http/Dto.js"
import { machineDto } from "../machines/Dto.js"
import { operationDto } from "../operations/Dto.js"
import { EngineReads } from "../runtime/EngineReads.js"
import { WebhooksRepo } from "./Repo.js"

const notQueued = () => undefined

export const makeRecorder = Effect.gen(function*() {
  const repo = yield* WebhooksRepo
  const marks = yield* OutboxMarks
  const { machines, operations } = yield* EngineReads
  const toMachine = machineDto(yield* AppConfig)
  const toOperation = operationDto(notQueued)

  const dataOf = (event: DomainEvent): Effect.Effect<Option.Option<unknown>> => {
    switch (event._tag) {
      case "MachineEvent":
        return Effect.map(machines.find(event.machineId), Option.map((row): unknown => toMachine(row)))
      case "OperationSettled":
        return Effect.map(operations.find(event.operationId), Option.map((row): unknown => toOperation(row)))
      case "ResourceSettled":
        return Effect.succeedSome(event.data)
      default:
        return Effect.succeedNone
    }
  }

  /** An organization's endpoints with the types each follows, read once per batch of events. */
  type Followers = Map<string, ReadonlyArray<{ readonly id: string; readonly types: ReadonlyArray<string> }>>
  const followersOf = (organizationId: string, known: Followers) =>
    Effect.suspend(() => {
      const found = known.get(organizationId)
      if (found !== undefined) return Effect.succeed(found)
      return Effect.map(repo.following(organizationId), (rows) => {
        const endpoints = rows.map((row) => ({ id: row.id, types: JSON.parse(row.events) as Array<string> }))
        known.set(organizationId, endpoints)
        return endpoints
      })
    })

  const recordOne = (event: DomainEvent, now: number, known: Followers) =>
    Effect.gen(function*() {
      if (!recordable(event)) return
      const endpoints = (yield* followersOf(event.organizationId, known)).filter((endpoint) =>
        endpoint.types.includes(event.type)
      )
      if (endpoints.length === 0) return
      const data = yield* dataOf(event)
      if (Option.isNone(data)) return
      const eventId = uuidv7(now)
      const body = JSON.stringify({ type: event.type, timestamp: iso(now), data: data.value })
      marks.mark("webhooks")
      for (const endpoint of endpoints) {
        yield* repo.insertDelivery({
          id: uuidv7(now),
          webhook_id: endpoint.id,
          event_id: eventId,
          event_type: event.type,
          machine_id: event.machineId,
          operation_id: event._tag === "MachineEvent" ? null : event.operationId,
          body,
          status: "pending",
          attempt_count: 0,
          created_at: now,
          delivered_at: null,
          last_attempt_at: null,
          next_attempt_at: now,
          last_status_code: null,
          last_error: null
        })
      }
    })

  // A settle records its machine's and its operation's events together: their organization's
  // endpoints are read once for both.
  return (events: ReadonlyArray<DomainEvent>) => {
    const known: Followers = new Map()
    return eachEvent((event, now) => recordOne(event, now, known))(events)
  }
})
