/**
 * Billing's background fiber: a meter tick every `SVC_METER_SECONDS` (on the Clock, so TestClock
 * drives it) and one at every machine stop, then the time rules, the stops of every exhausted
 * organization's machines (`stop_reason` `billing`; repeated stops of one boot are one stop, so a
 * crash between the charge and the stop only delays it to the next tick), and the refills due.
 * With `SVC_BILLING=unlimited` there are no time rules: once nothing is left to meter the fiber
 * waits for a machine to start instead of ticking, so an idle svc does no work.
 *
 * The meter runs on one node at a time (Singletons.ts: two meters at once could charge a span
 * twice). Every node tells it of its machines' starts and stops through the signals
 * (`billing`: "" for a start, the machine's id for a stop); a signal lost on the way costs nothing
 * the next tick does not make up (it meters every machine), and an idle meter looks again every
 * 10 s on PostgreSQL (Signals.ts `poll`).
 */
import { Context, Effect, Layer, Queue } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { type DomainEvent, DomainEvents } from "../kernel/events/DomainEvents.js"
import { Signals } from "../kernel/events/Signals.js"
import { Singletons } from "../kernel/sql/Singletons.js"
import { Machines } from "../machines/Machines.js"
import { Billing } from "./Billing.js"
import { Meter } from "./Meter.js"
import { Purchases } from "./Purchases.js"
import { BillingRepo } from "./Repo.js"

type Stopped = Extract<DomainEvent, { _tag: "MachineEvent" }>
/** A machine's stop; one that found it stopped already was metered at its real stop. */
export const isStop = (event: DomainEvent): event is Stopped =>
  event._tag === "MachineEvent" && event.type === "machine.stopped" && event.unchanged !== true
const isStart = (event: DomainEvent) => event._tag === "MachineEvent" && event.type === "machine.ready"
/** The signals' channel: "" a machine started, else the id of a machine that stopped. */
const channel = "billing"

const make = Effect.gen(function*() {
  const meter = yield* Meter
  const billing = yield* Billing
  const machines = yield* Machines
  const repo = yield* BillingRepo
  const bus = yield* DomainEvents
  const purchases = yield* Purchases
  const timeRules = (yield* AppConfig).billing === "metered"

  const stopExhausted = (organizations: ReadonlyArray<string>) =>
    Effect.forEach(new Set(organizations), (organizationId) => machines.stopAll(organizationId, "billing"), {
      discard: true
    })

  /** One tick: meter, apply the time rules, stop what an exhausted organization still runs. */
  const tick = Effect.gen(function*() {
    const metered = yield* meter.run()
    const ruled = yield* billing.applyDueRules
    const exhausted = new Set(yield* repo.exhausted())
    const still = (yield* machines.organizationsRunning).filter((organizationId) => exhausted.has(organizationId))
    yield* stopExhausted([...metered.exhausted, ...ruled, ...still])
    yield* purchases.refillDue
    return metered.machines
  })

  const atStop = (machineId: string) => Effect.flatMap(meter.run(machineId), (run) => stopExhausted(run.exhausted))

  // Every node: its machines' starts and stops, to the meter wherever it runs.
  const signals = yield* Signals
  const lifecycle = yield* bus.subscribe((event) => isStop(event) || isStart(event))
  yield* Effect.forkScoped(
    Effect.forever(Effect.flatMap(lifecycle.take, (event) =>
      event._tag === "MachineEvent" && isStop(event)
        ? signals.notify(channel, event.machineId)
        : signals.notify(channel)))
  )

  /** The meter's node: meters a stopped machine at once, and ticks. */
  const metering = Effect.scoped(Effect.gen(function*() {
    const heard = yield* signals.subscribe(channel)
    const starts = yield* Queue.sliding<void>(1)
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(heard.take, (machineId) =>
      machineId === ""
        ? Queue.offer(starts, undefined)
        : Effect.catchAllCause(atStop(machineId), Effect.logWarning))))
    const idle = Effect.raceFirst(Queue.take(starts), signals.poll)
    const ticking = Effect.gen(function*() {
      yield* Queue.takeAll(starts)
      const machines = yield* Effect.catchAllCause(
        tick,
        (cause) => Effect.as(Effect.logWarning("billing tick failed", cause), 1)
      )
      if (machines === 0 && !timeRules) yield* idle
      else yield* Effect.sleep(meter.intervalMs)
    })
    return yield* Effect.forever(ticking)
  }))
  yield* Effect.forkScoped((yield* Singletons).run("meter", metering))
  return { tick }
})

export class BillingWorker extends Context.Tag("svc/billing/BillingWorker")<
  BillingWorker,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.scoped(BillingWorker, make)
}
