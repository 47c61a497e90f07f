/** The error codes of machines and operations (api.md "Errors", extensions.md §5). */
import { Effect, Schema } from "effect"
import { conflictOf, type MachineState } from "../domain/MachineStates.js"
import { problem, ProblemFields } from "./Problem.js"

export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>()(
  "idempotency_conflict",
  ProblemFields,
  problem(409, "Idempotency key reused with a different request")
) {}

export class MachineNotRunning extends Schema.TaggedError<MachineNotRunning>()(
  "machine_not_running",
  ProblemFields,
  problem(409, "Machine not running")
) {}

export class MachineNotCreated extends Schema.TaggedError<MachineNotCreated>()(
  "machine_not_created",
  ProblemFields,
  problem(409, "Machine not created")
) {}

export class MachineDeleted extends Schema.TaggedError<MachineDeleted>()(
  "machine_deleted",
  ProblemFields,
  problem(409, "Machine deleted")
) {}

export class MachineNotStopped extends Schema.TaggedError<MachineNotStopped>()(
  "machine_not_stopped",
  ProblemFields,
  problem(409, "Machine not stopped")
) {}

export class NameTaken extends Schema.TaggedError<NameTaken>()(
  "name_taken",
  ProblemFields,
  problem(409, "Another live machine of the organization has this name")
) {}

export class LimitExceeded extends Schema.TaggedError<LimitExceeded>()(
  "limit_exceeded",
  ProblemFields,
  problem(429, "Machine limit reached")
) {}

export class RuntimeUnavailable extends Schema.TaggedError<RuntimeUnavailable>()(
  "runtime_unavailable",
  ProblemFields,
  problem(503, "Machines are not available on this server now")
) {}

export const machineConflicts = {
  machine_not_running: MachineNotRunning,
  machine_not_created: MachineNotCreated,
  machine_deleted: MachineDeleted,
  machine_not_stopped: MachineNotStopped
} as const

/**
 * The machine must be running now: agent routes talk to it at once, without an operation, so its
 * real state is checked (not the projected one) by the rule exec follows (`conflictOf`).
 */
export const requireRunning = <M extends { readonly state: MachineState }>(
  machine: M
): Effect.Effect<M, MachineNotRunning | MachineNotCreated | MachineDeleted> => {
  const conflict = conflictOf("exec", machine.state)
  if (conflict === undefined) return Effect.succeed(machine)
  if (conflict === "machine_not_stopped") return Effect.dieMessage("exec never needs a stopped machine")
  return Effect.fail(new machineConflicts[conflict]({ detail: `The machine is ${machine.state}` }))
}

/** Something in the machine did not answer as needed: the port proxy found nothing listening. */
export class GuestActionFailed extends Schema.TaggedError<GuestActionFailed>()(
  "guest_action_failed",
  ProblemFields,
  problem(502, "The machine did not answer")
) {}
