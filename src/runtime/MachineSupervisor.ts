/**
 * The supervisor: one actor fiber per machine with work, each taking that machine's operations one
 * at a time in acceptance order from the operations table (the durable mailbox; the in-memory queue
 * only wakes the fiber). No machine waits for another. An actor that dies is restarted alone. On
 * start, what was `running` becomes `uncertain` and every machine with open work is woken. Only the
 * machines of this node's host (its lease: src/kernel/sql/HostLease.ts): another host's are driven
 * by that host's node, woken by a signal on the host's channel (`hostChannel`) after the accept's
 * commit; a slow poll (`Signals.poll`) finds what a lost signal would have left waiting.
 *
 * Its parts: the actors' registry (Actors.ts), one operation's run (RunOperation.ts) with its
 * admission to the host (Admission.ts), and the writes that settle it (Settle.ts).
 */
import { Clock, Context, Deferred, Effect, Layer, Option, Queue } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { Signals } from "../kernel/events/Signals.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { HostLease } from "../kernel/sql/HostLease.js"
import { makeActors } from "./Actors.js"
import { makeAdmission } from "./Admission.js"
import { stoppedOnItsOwn } from "./Apply.js"
import { MachinesRepo } from "./MachinesRepo.js"
import { type OperationRow, OperationsRepo } from "./OperationsRepo.js"
import { makeRun, type Running } from "./RunOperation.js"
import { makeSettling } from "./Settle.js"

export interface MachineSupervisorShape {
  /** Tells the machine's actor that work was accepted (starting the actor if it sleeps). */
  readonly wake: (machineId: string) => Effect.Effect<void>
  /**
   * Cancels an operation that has not ended, so that no operation holds a machine's mailbox: a
   * pending one fails `cancelled` at once; a running exec is killed and fails `cancelled` (its
   * result says so); any other running or uncertain one ends `correlation_miss` with error_code
   * `cancelled` (its effect on the host cannot be known), within `cancelGraceSeconds`.
   */
  readonly cancel: (operation: OperationRow) => Effect.Effect<void>
  /** Cancels every open operation of the machine accepted before `operationId` (a forced stop, a delete). */
  readonly cancelAhead: (machineId: string, operationId: string) => Effect.Effect<void>
}

export class MachineSupervisor extends Context.Tag("svc/runtime/MachineSupervisor")<
  MachineSupervisor,
  MachineSupervisorShape
>() {}

/** The channel on which a host's node hears of work accepted elsewhere for its machines (payload: the machine id). */
export const hostChannel = (hostId: string) => `host:${hostId}`

const make = Effect.gen(function*() {
  const lease = yield* HostLease
  const { hostId } = lease
  const commit = yield* GroupCommit
  const machines = yield* MachinesRepo
  const operations = yield* OperationsRepo
  const driver = yield* MachineDriver
  const scope = yield* Effect.scope
  const cancels = new Map<string, Running>()
  const settling = yield* makeSettling
  const { persist, record, recordStatus, reproject } = settling
  const run = yield* makeRun(settling, yield* makeAdmission(settling), cancels)
  const signals = yield* Signals
  /** Whether the machine is this host's; another host's node is told of its work (after the commit). */
  const owns = (machineId: string) =>
    Effect.flatMap(machines.hostOf(machineId), (host) => {
      if (Option.isNone(host) || host.value === null) return Effect.succeed(false)
      if (host.value === hostId) return Effect.succeed(true)
      return Effect.as(signals.notify(hostChannel(host.value), machineId), false)
    })
  const { abandonAfterGrace, wake, wakeIdle } = yield* makeActors(run, owns, cancels, scope)

  /** A recovery write, fenced like every other write that drives the host's machines. */
  const fenced = <A>(effect: Effect.Effect<A>) => commit.transaction(Effect.zipRight(lease.fence, effect))

  // Rows from before hosts are this host's (an upgraded single host keeps its machines); on SQLite
  // every machine is (one node per data dir, whatever its host id was).
  const adopted = yield* fenced(machines.adopt(hostId))
  if (adopted > 0) {
    yield* Effect.logInfo("machines given to this host").pipe(
      Effect.annotateLogs({ host_id: hostId, machines: adopted })
    )
  }

  // Reconcile: a machine whose sandbox ended while svc was down (a crash, a host restart) is stopped.
  for (const machine of yield* machines.runningOn(hostId)) {
    const seen = yield* Effect.either(driver.observe(machine.id))
    if (seen._tag === "Right" && !seen.right.running) {
      yield* Effect.logWarning("machine found not running; marked stopped").pipe(
        Effect.annotateLogs("machine_id", machine.id)
      )
      yield* persist(() =>
        Effect.gen(function*() {
          yield* machines.update(machine.id, { ...stoppedOnItsOwn(yield* Clock.currentTimeMillis) })
          yield* reproject(machine.id)
        })
      )
    }
  }

  // Work accepted on other nodes for this host's machines: listened to before recovery looks at the
  // table, so nothing accepted meanwhile is missed. An empty payload (the signals' session was
  // renewed: some may be lost) and the slow poll look for every machine with work and no actor.
  const accepted = yield* signals.subscribe(hostChannel(hostId))
  const wakeAllIdle = Effect.flatMap(operations.machinesWithOpenWork(hostId), wakeIdle).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("the look for this host's work failed", cause))
  )

  // Recovery: what was running can no longer be known; re-apply it, and wake every machine with work.
  yield* fenced(operations.markInterruptedUncertain(hostId))
  yield* Effect.forEach(yield* operations.machinesWithOpenWork(hostId), wake, { discard: true })
  yield* Effect.forkIn(
    Effect.forever(
      Effect.flatMap(Queue.take(accepted), (machineId) => machineId === "" ? wakeAllIdle : wake(machineId))
    ),
    scope
  )
  // The safety net; on SQLite every accept is this node's own and `poll` never completes. Its wait
  // is on the wall clock (a TestClock jump of days must not run a poll per period of it); the wake
  // itself keeps svc's Clock, which the actors it starts inherit.
  yield* Effect.forkIn(Effect.forever(Effect.zipRight(signals.poll, wakeAllIdle)), scope)

  const cancel = (operation: OperationRow) =>
    Effect.gen(function*() {
      yield* persist((published) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          if (!(yield* operations.cancelPending(operation.id, now))) return
          yield* reproject(operation.machine_id)
          yield* recordStatus(published, operation, "failed", operation.attempt_count, "cancelled", now)
          yield* record(published, operation, "end", { status: "failed" }, now)
        })
      )
      // A pending boot may wait in the start queue: its actor gives up its place.
      const running = cancels.get(operation.id)
      if (running !== undefined) {
        yield* Deferred.succeed(running.cancelled, undefined)
        yield* Effect.forkIn(abandonAfterGrace(operation, running), scope)
      }
    })

  return MachineSupervisor.of({
    wake,
    cancel,
    cancelAhead: (machineId, operationId) =>
      Effect.flatMap(
        operations.openBefore(machineId, operationId),
        (ahead) => Effect.forEach(ahead, cancel, { discard: true })
      )
  })
})

export const layer = Layer.scoped(MachineSupervisor, make)
