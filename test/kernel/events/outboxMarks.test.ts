/**
 * A sender's bus filter (src/kernel/events/OutboxMarks.ts): the bus hands the sender an event it
 * follows only when a recorder marked its outbox since the last one, so unmarked events never wake it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Queue } from "effect"
import { type DomainEvent, DomainEvents } from "../../../src/kernel/events/DomainEvents.js"
import { OutboxMarks } from "../../../src/kernel/events/OutboxMarks.js"

const settled = (machineId: string): DomainEvent => ({
  _tag: "OperationSettled",
  type: "operation.succeeded",
  operationId: `op-${machineId}`,
  kind: "stop",
  stopReason: null,
  machineId,
  organizationId: "org"
})
const changed: DomainEvent = { _tag: "MachineSettingsChanged", machineId: "m" }

describe("outbox marks", () => {
  it.scoped("a sender receives a followed event only with its outbox marked, once per mark, its own outbox only", () =>
    Effect.gen(function*() {
      const bus = yield* DomainEvents
      const marks = yield* OutboxMarks
      const follows = (event: DomainEvent) => event._tag === "OperationSettled"
      const webhooks = yield* bus.subscribe(marks.whenMarked("webhooks", follows))
      const alerts = yield* bus.subscribe(marks.whenMarked("alerts", follows))
      yield* bus.deliver(settled("a")) // nothing marked: nobody woken
      marks.mark("webhooks")
      yield* bus.deliver(changed) // marked, but not followed: the mark waits
      yield* bus.deliver(settled("b")) // takes the mark
      yield* bus.deliver(settled("c")) // the mark is gone
      marks.mark("alerts")
      marks.mark("webhooks")
      yield* bus.deliver(settled("d"))
      assert.deepStrictEqual(Chunk.toArray(yield* Queue.takeAll(webhooks)), [settled("b"), settled("d")])
      assert.deepStrictEqual(Chunk.toArray(yield* Queue.takeAll(alerts)), [settled("d")])
    }).pipe(Effect.provide(Layer.merge(DomainEvents.layer, OutboxMarks.layer))))
})
