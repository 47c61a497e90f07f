/**
 * One in-process bus for machine and operation lifecycle events. The actors publish; live SSE
 * streams, and later webhooks, email alerts and metering, subscribe without touching the actors.
 * Publishing never blocks an actor: a slow subscriber loses the oldest events of its own buffer.
 * SSE readers of one operation do not subscribe: they listen to that operation's wake-ups only
 * (src/events/Wakeups.ts) and read the persisted history, so they miss nothing.
 */
import { Context, Effect, Layer, PubSub, type Queue, type Scope } from "effect"
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
    readonly machineId: string
    readonly organizationId: string
  }

export interface DomainEventsShape {
  readonly publish: (event: DomainEvent) => Effect.Effect<void>
  readonly subscribe: Effect.Effect<Queue.Dequeue<DomainEvent>, never, Scope.Scope>
  /** Calls `onNews` at each `OperationEvent` of one operation, until the returned function is called. */
  readonly listenOperation: (operationId: string, onNews: () => void) => () => void
  /** How many follow the operation (for tests: a closed stream leaves nothing behind). */
  readonly watchingOperation: (operationId: string) => number
}

export class DomainEvents extends Context.Tag("svc/events/DomainEvents")<DomainEvents, DomainEventsShape>() {
  static readonly layer = Layer.effect(
    DomainEvents,
    Effect.map(PubSub.sliding<DomainEvent>(4096), (pubsub) => {
      const operationWakeups = makeWakeups<string>()
      return {
        publish: (event) => {
          const published = Effect.asVoid(PubSub.publish(pubsub, event))
          return event._tag === "OperationEvent"
            ? Effect.zipRight(operationWakeups.wake(event.operationId), published)
            : published
        },
        subscribe: PubSub.subscribe(pubsub),
        listenOperation: operationWakeups.listen,
        watchingOperation: operationWakeups.watching
      }
    })
  )
}
