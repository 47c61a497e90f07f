/**
 * The outbox port: what must be written in the same transaction as a domain event. The machine
 * runtime (the settle, the claims) and the accept paths call `record` with the events they publish,
 * inside the transaction that writes them, so a webhook delivery or an e-mail alert is committed
 * with its cause or not at all: a crash at any instant loses none and invents none.
 * The areas that keep such an outbox (webhooks, alerts) each give one recorder; App.ts joins them.
 * A recorder must only write rows (no I/O, no waiting): the group commit of every request waits
 * for it. Its senders read the rows afterwards, woken by the bus (DomainEvents.deliver).
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { DomainEvent } from "./DomainEvents.js"

/** Writes an area's rows for `events`, inside the caller's transaction. */
export type EventRecorder = (events: ReadonlyArray<DomainEvent>) => Effect.Effect<void>

/** A recorder from what it writes for one event, every event of a batch at the same time. */
export const eachEvent =
  (recordOne: (event: DomainEvent, now: number) => Effect.Effect<void>): EventRecorder => (events) =>
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => Effect.forEach(events, (event) => recordOne(event, now), { discard: true })
    )

export interface EventRecordersShape {
  readonly record: EventRecorder
}

/** Whether an event is a machine's that a recorder may keep (operation output and progress never are). */
export const recordable = (event: DomainEvent) =>
  event._tag === "MachineEvent" || event._tag === "OperationSettled" || event._tag === "ResourceSettled"

/** Whether an event can concern a recorder at all: a machine's, or billing's news. */
const concernsRecorders = (event: DomainEvent) => recordable(event) || event._tag === "BillingNotice"

export class EventRecorders extends Context.Tag("svc/events/EventRecorders")<EventRecorders, EventRecordersShape>() {
  /** The recorders, run one after the other; events that concern none cost a filter. */
  static readonly joining = (recorders: ReadonlyArray<EventRecorder>): EventRecordersShape => ({
    record: (events) => {
      const kept = events.filter(concernsRecorders)
      if (kept.length === 0 || recorders.length === 0) return Effect.void
      return Effect.forEach(recorders, (recorder) => recorder(kept), { discard: true })
    }
  })
  /** No outbox: for tests and tools that build the runtime alone. */
  static readonly none = Layer.succeed(EventRecorders, EventRecorders.joining([]))
}
