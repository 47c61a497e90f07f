/**
 * Billing's background fiber: a meter tick every `SVC_METER_SECONDS` (on the Clock, so TestClock
 * drives it) and one at every machine stop, then the time rules, the stops of every exhausted
 * organization's machines (`stop_reason` `billing`; repeated stops of one boot are one stop, so a
 * crash between the charge and the stop only delays it to the next tick), and the refills due.
 */
import { Context, Effect, Layer, Schedule } from "effect"
import { type DomainEvent, DomainEvents } from "../kernel/events/DomainEvents.js"
import { Machines } from "../machines/Machines.js"
import { Billing } from "./Billing.js"
import { Meter } from "./Meter.js"
import { Purchases } from "./Purchases.js"
import { BillingRepo } from "./Repo.js"

type Stopped = Extract<DomainEvent, { _tag: "MachineEvent" }>
const isStop = (event: DomainEvent): event is Stopped =>
  event._tag === "MachineEvent" && event.type === "machine.stopped"

const make = Effect.gen(function*() {
  const meter = yield* Meter
  const billing = yield* Billing
  const machines = yield* Machines
  const repo = yield* BillingRepo
  const bus = yield* DomainEvents
  const purchases = yield* Purchases

  const stopExhausted = (organizations: ReadonlyArray<string>) =>
    Effect.forEach(new Set(organizations), (organizationId) => machines.stopAll(organizationId, "billing"), {
      discard: true
    })

  /** One tick: meter, apply the time rules, stop what an exhausted organization still runs. */
  const tick = Effect.gen(function*() {
    const metered = yield* meter.run()
    const ruled = yield* billing.applyDueRules
    const still = yield* repo.exhaustedWithRunning()
    yield* stopExhausted([...metered, ...ruled, ...still.map((row) => row.organization_id)])
    yield* purchases.refillDue
  })

  const atStop = (event: Stopped) => Effect.flatMap(meter.run(event.machineId), stopExhausted)

  const stops = yield* bus.subscribe(isStop)
  yield* Effect.forkScoped(
    Effect.forever(Effect.flatMap(stops.take, (event) => Effect.catchAllCause(atStop(event), Effect.logWarning)))
  )
  yield* Effect.forkScoped(
    Effect.repeat(
      Effect.catchAllCause(tick, (cause) => Effect.logWarning("billing tick failed", cause)),
      Schedule.spaced(meter.intervalMs)
    )
  )
  return { tick }
})

export class BillingWorker extends Context.Tag("svc/billing/BillingWorker")<
  BillingWorker,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.scoped(BillingWorker, make)
}
