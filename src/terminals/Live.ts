/**
 * The terminals area. Two layers: `TerminalsKernelLive` (the open channels and the
 * AccessRevocations port they fill, and the IdleHolds port over the open terminals) sits with the kernel's ports in src/App.ts, because member
 * removal and suspension below the areas call it; `TerminalsLive` (tickets, terminals and the
 * worker that closes a machine's terminals when it stops or is deleted) sits with the areas.
 */
import { Effect, Layer } from "effect"
import { DomainEvents } from "../kernel/events/DomainEvents.js"
import { IdleHolds } from "../kernel/IdleHolds.js"
import { revocationsLayer, TerminalChannels } from "./Channels.js"
import { TerminalsRepo } from "./Repo.js"
import { Terminals } from "./Terminals.js"

/** An open terminal holds its machine's idle_sleep off (the machines area's timers ask). */
const idleHoldsLayer = Layer.effect(
  IdleHolds,
  Effect.map(TerminalsRepo, (repo) => ({ held: repo.machinesWithOpenTerminal }))
)

export const TerminalsKernelLive = Layer.mergeAll(revocationsLayer, idleHoldsLayer).pipe(
  Layer.provideMerge(TerminalChannels.layer),
  Layer.provide(TerminalsRepo.layer)
)

/** A machine that stops or is deleted takes its terminals with it; svc's end closes every one. */
const worker = Layer.scopedDiscard(Effect.gen(function*() {
  const terminals = yield* Terminals
  const channels = yield* TerminalChannels
  const bus = yield* DomainEvents
  yield* terminals.closeLeftOpen
  // Only while a channel is open: the stops of machines nobody has a terminal on wake nothing.
  const ends = yield* bus.subscribe((event) =>
    event._tag === "MachineEvent" && (event.type === "machine.stopped" || event.type === "machine.deleted") &&
    channels.anyOpen()
  )
  yield* Effect.forkScoped(Effect.forever(Effect.flatMap(ends.take, (event) =>
    event._tag === "MachineEvent"
      ? channels.closeMachine(event.machineId, event.type === "machine.deleted" ? "machine deleted" : "machine stopped")
      : Effect.void)))
  yield* Effect.addFinalizer(() => channels.closeAll("svc is shutting down"))
}))

export const TerminalsLive = worker.pipe(
  Layer.provideMerge(Terminals.layer),
  Layer.provide(TerminalsRepo.layer)
)
