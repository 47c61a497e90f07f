/** The bus (src/kernel/events/DomainEvents.ts): a subscriber receives the events it follows, and only those. */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Queue, Scope } from "effect"
import { type DomainEvent, DomainEvents } from "../../../src/kernel/events/DomainEvents.js"

const settled = (machineId: string): DomainEvent => ({
  _tag: "OperationSettled",
  type: "operation.succeeded",
  operationId: `op-${machineId}`,
  kind: "exec",
  stopReason: null,
  machineId,
  organizationId: "org"
})
const changed = (machineId: string): DomainEvent => ({ _tag: "MachineSettingsChanged", machineId })

describe("domain events", () => {
  it.scoped("each subscriber receives what it follows, in order, from its subscription on", () =>
    Effect.gen(function*() {
      const bus = yield* DomainEvents
      yield* bus.publish(changed("before"))
      const settings = yield* bus.subscribe((event) => event._tag === "MachineSettingsChanged")
      const everything = yield* bus.subscribe(() => true)
      for (const event of [settled("a"), changed("b"), settled("c"), changed("d")]) yield* bus.publish(event)
      assert.deepStrictEqual(Chunk.toArray(yield* Queue.takeAll(settings)), [changed("b"), changed("d")])
      assert.deepStrictEqual(Chunk.toArray(yield* Queue.takeAll(everything)), [
        settled("a"),
        changed("b"),
        settled("c"),
        changed("d")
      ])
    }).pipe(Effect.provide(DomainEvents.layer)))

  it.scoped("readable wakes the operation's followers only, deliver the subscribers only, publish both", () =>
    Effect.gen(function*() {
      const bus = yield* DomainEvents
      const event: DomainEvent = {
        _tag: "OperationEvent",
        operationId: "op",
        machineId: "m",
        kind: "exec",
        id: 1,
        name: "end",
        data: {}
      }
      let woken = 0
      bus.listenOperation("op", () => woken++)
      const subscriber = yield* bus.subscribe(() => true)
      yield* bus.readable(event)
      assert.deepStrictEqual([woken, yield* Queue.size(subscriber)], [1, 0])
      yield* bus.deliver(event)
      assert.deepStrictEqual([woken, yield* Queue.size(subscriber)], [1, 1])
      yield* bus.publish(event)
      assert.deepStrictEqual([woken, yield* Queue.size(subscriber)], [2, 2])
    }).pipe(Effect.provide(DomainEvents.layer)))

  it.scoped("a closed subscription receives nothing more and is shut down", () =>
    Effect.gen(function*() {
      const bus = yield* DomainEvents
      const scope = yield* Scope.make()
      const events = yield* Scope.extend(bus.subscribe(() => true), scope)
      yield* Scope.close(scope, Exit.void)
      yield* bus.publish(changed("a"))
      assert.isTrue(yield* Queue.isShutdown(events))
    }).pipe(Effect.provide(DomainEvents.layer)))
})
