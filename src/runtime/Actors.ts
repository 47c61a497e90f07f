/**
 * The registry of machine actors: one fiber per machine with open operations, started by a wake,
 * ended once its mailbox (the operations table) is empty and nothing woke it meanwhile. A crashed
 * actor is restarted alone; an operation a cancel abandoned has its actor interrupted.
 */
import { Cause, Effect, Fiber, Option, type Scope } from "effect"
import { isTerminal, type OperationRow, OperationsRepo } from "./OperationsRepo.js"
import { type Running } from "./RunOperation.js"

interface Actor {
  /**
   * Set by a wake while the actor drains, cleared before each read of the mailbox and looked at
   * before the actor ends, so no wake is lost. A flag, not a queue: the actor never waits on it, and
   * making a queue per actor start ran a fiber of its own (Effect.runSync).
   */
  woken: boolean
  /** The actor's fiber, for a cancel that must end an operation which does not end by itself. */
  fiber?: Fiber.RuntimeFiber<void>
}

/** How long a cancelled operation other than an exec may still run before it is interrupted. */
export const cancelGraceSeconds = 10

/**
 * `run` carries one operation to its end; `cancels` is the map it keeps of the operations being
 * carried out; the actors' fibers live in `scope`.
 */
export const makeActors = (
  run: (operation: OperationRow) => Effect.Effect<void>,
  /** Whether the machine is this node's host's: another host's machine is driven by its own node, which it tells. */
  owns: (machineId: string) => Effect.Effect<boolean>,
  cancels: ReadonlyMap<string, Running>,
  scope: Scope.Scope
) =>
  Effect.gen(function*() {
    const operations = yield* OperationsRepo
    const actors = new Map<string, Actor>()

    /** The actor: drains the machine's open operations, then ends once nothing woke it meanwhile. */
    const actor = (machineId: string, self: Actor): Effect.Effect<void> =>
      Effect.gen(function*() {
        // A machine accepted here for another host is driven there (`owns` tells its node), not here.
        if (!(yield* owns(machineId))) {
          if (actors.get(machineId) === self) actors.delete(machineId)
          return
        }
        while (true) {
          self.woken = false
          const next = yield* operations.nextOpen(machineId)
          if (Option.isSome(next)) {
            if (!isTerminal(next.value.status)) yield* run(next.value)
            continue
          }
          // Checked and removed in one synchronous step, so a wake cannot fall between the two.
          if (self.woken) continue
          actors.delete(machineId)
          return
        }
      })

    /** A crashed actor is logged and restarted alone after a pause; other machines go on. */
    const supervised = (machineId: string, self: Actor): Effect.Effect<void> =>
      actor(machineId, self).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ?
            Effect.failCause(cause) :
            Effect.logError("machine actor crashed; restarting", cause).pipe(
              Effect.annotateLogs("machine_id", machineId),
              Effect.zipRight(Effect.sleep("1 second")),
              Effect.zipRight(Effect.suspend(() => supervised(machineId, self)))
            )
        )
      )

    /** Tells the machine's actor that work was accepted (starting the actor if it sleeps). */
    const wake = (machineId: string) =>
      Effect.suspend(() => {
        const existing = actors.get(machineId)
        if (existing !== undefined) {
          existing.woken = true
          return Effect.void
        }
        const self: Actor = { woken: true }
        actors.set(machineId, self)
        // Interruptible whoever wakes it: a fork inherits its parent's region, and a wake may come
        // from an uninterruptible one (PostgreSQL's group commit runs `committed` in its caller's
        // uninterruptible mask): a cancel's grace and the scope's close must be able to end it.
        return Effect.interruptible(supervised(machineId, self)).pipe(
          Effect.forkIn(scope),
          Effect.map((fiber) => void (self.fiber = fiber))
        )
      })

    /**
     * A cancelled operation that has not ended after `cancelGraceSeconds` (an exec ends at once; any
     * other kind has no cancel of its own) is abandoned: its actor is interrupted, which ends the
     * driver's work and its scoped processes, settles the operation as cancelled and starts a new
     * actor for the rest of the mailbox. Only a cancel pays for this, not every operation.
     */
    const abandonAfterGrace = (operation: OperationRow, running: Running) =>
      Effect.gen(function*() {
        yield* Effect.sleep(`${cancelGraceSeconds} seconds`)
        const actor = actors.get(operation.machine_id)
        if (cancels.get(operation.id) !== running || actor?.fiber === undefined) return
        running.abandoned = true
        yield* Fiber.interrupt(actor.fiber)
        if (actors.get(operation.machine_id) === actor) actors.delete(operation.machine_id)
        yield* wake(operation.machine_id)
      })

    /** Wakes those of `machineIds` that have no actor (a busy actor reads its mailbox anyway). */
    const wakeIdle = (machineIds: ReadonlyArray<string>) =>
      Effect.forEach(machineIds, (id) => actors.has(id) ? Effect.void : wake(id), { discard: true })

    return { wake, wakeIdle, abandonAfterGrace }
  })
