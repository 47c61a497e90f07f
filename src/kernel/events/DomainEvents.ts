/**
 * One in-process bus for machine and operation lifecycle events. The actors publish; the stop
 * timers, the snapshot bookkeeping, and later webhooks, email alerts and metering subscribe without
 * touching the actors.
 * Publishing never blocks an actor: a slow subscriber loses the oldest events of its own buffer.
 * A subscriber says which events it follows, and only those reach its buffer: the subscribers of
 * today follow a few events of a few kinds, and being woken for every event of every operation to
 * pass over it cost each of them runtime steps per event.
 * SSE readers of one operation do not subscribe: they listen to that operation's wake-ups only
 * (src/kernel/events/Wakeups.ts) and read the persisted history, so they miss nothing.
 */
import { Context, Effect, Layer, Queue, type Scope } from "effect"
import type { OperationKind } from "../domain/MachineStates.js"
import { makeWakeups } from "./Wakeups.js"

export type DomainEvent =
  | {
    readonly _tag: "OperationEvent"
    readonly operationId: string
    readonly machineId: string
    /** The operation's kind, so a subscriber can pass over what it does not follow without a read. */
    readonly kind: OperationKind
    /** The persisted event id. */
    readonly id: number
    readonly name: "status" | "output" | "progress" | "end"
    readonly data: unknown
  }
  | {
    readonly _tag: "MachineEvent"
    readonly type: "machine.created" | "machine.ready" | "machine.stopped" | "machine.deleted" | "machine.error"
    readonly machineId: string
    readonly organizationId: string
    /**
     * The operation found the machine so already (a stop of a stopped machine): nothing moved, so a
     * subscriber that follows changes (billing's metering) passes over it.
     */
    readonly unchanged?: boolean
  }
  | {
    /** A PATCH changed the machine's settings (its stop timers, say). */
    readonly _tag: "MachineSettingsChanged"
    readonly machineId: string
  }
  | {
    readonly _tag: "OperationSettled"
    readonly type: "operation.succeeded" | "operation.failed"
    readonly operationId: string
    /**
     * So a recorder can pass over what cannot concern it (a succeeded exec, a stop asked for through
     * the API) without a read: the operation's kind, and a stop's reason.
     */
    readonly kind: OperationKind
    readonly stopReason: string | null
    readonly machineId: string
    readonly organizationId: string
  }
  | {
    /**
     * A snapshot or an agent turn reached its end. `data` is the resource as its transaction wrote
     * it (SnapshotDto, AgentTurnDto): the producer has the row in hand, the outbox takes it as is.
     */
    readonly _tag: "ResourceSettled"
    readonly type: "snapshot.ready" | "snapshot.failed" | "agent.turn_finished"
    readonly data: unknown
    readonly machineId: string
    readonly operationId: string | null
    readonly organizationId: string
  }
  | {
    /**
     * Billing's news for the organization's owners and billing members (e-mail alerts): its balance
     * ran out, or its trial ends at `at` (told 3 days ahead). Recorded, never published on the bus.
     */
    readonly _tag: "BillingNotice"
    readonly type: "billing.exhausted" | "billing.trial_ending"
    readonly organizationId: string
    readonly at: number
  }

export interface DomainEventsShape {
  /** `readable` and `deliver` at once: for events whose rows are on disk (or that have none). */
  readonly publish: (event: DomainEvent) => Effect.Effect<void>
  /**
   * The event's row is committed, its flush may still run: wakes the readers that follow its
   * operation (event streams), which read what any GET would read by then. Not the subscribers.
   */
  readonly readable: (event: DomainEvent) => Effect.Effect<void>
  /** To the subscribers that follow it, once its commit is on disk (they act on it: webhooks, timers). */
  readonly deliver: (event: DomainEvent) => Effect.Effect<void>
  /** The events `follows` accepts, published from now on, for the scope's lifetime. */
  readonly subscribe: {
    <A extends DomainEvent>(
      follows: (event: DomainEvent) => event is A
    ): Effect.Effect<Queue.Dequeue<A>, never, Scope.Scope>
    (follows: (event: DomainEvent) => boolean): Effect.Effect<Queue.Dequeue<DomainEvent>, never, Scope.Scope>
  }
  /** Calls `onNews` at each `OperationEvent` of one operation, until the returned function is called. */
  readonly listenOperation: (operationId: string, onNews: () => void) => () => void
  /** How many follow the operation (for tests: a closed stream leaves nothing behind). */
  readonly watchingOperation: (operationId: string) => number
}

/** Events a subscriber may hold unread before it loses the oldest. */
const bufferSize = 4096

interface Subscriber {
  readonly follows: (event: DomainEvent) => boolean
  readonly queue: Queue.Queue<DomainEvent>
}

export class DomainEvents extends Context.Tag("svc/events/DomainEvents")<DomainEvents, DomainEventsShape>() {
  static readonly layer = Layer.effect(
    DomainEvents,
    Effect.sync(() => {
      const operationWakeups = makeWakeups<string>()
      const subscribers = new Set<Subscriber>()
      /** Offers `event` to the subscribers that follow it (a sliding offer: never waits). */
      const deliver = (event: DomainEvent) =>
        Effect.suspend(() => {
          let offers: Effect.Effect<void> = Effect.void
          for (const subscriber of subscribers) {
            if (subscriber.follows(event)) offers = Effect.zipRight(offers, Queue.offer(subscriber.queue, event))
          }
          return offers
        })
      const readable = (event: DomainEvent) =>
        event._tag === "OperationEvent" ? operationWakeups.wake(event.operationId) : Effect.void
      return {
        publish: (event) => Effect.zipRight(readable(event), deliver(event)),
        readable,
        deliver,
        subscribe: (follows: (event: DomainEvent) => boolean) =>
          Effect.map(
            Effect.acquireRelease(
              Effect.map(Queue.sliding<DomainEvent>(bufferSize), (queue) => {
                const subscriber = { follows, queue }
                subscribers.add(subscriber)
                return subscriber
              }),
              (subscriber) =>
                Effect.zipRight(Effect.sync(() => subscribers.delete(subscriber)), Queue.shutdown(subscriber.queue))
            ),
            (subscriber) => subscriber.queue
          ),
        listenOperation: operationWakeups.listen,
        watchingOperation: operationWakeups.watching
      }
    })
  )
}
