/** The error codes of machines and operations (api.md "Errors", extensions.md §5). */
import { Effect } from "effect"
import { conflictDetail, conflictOf, type MachineState } from "../domain/MachineStates.js"
import { ProblemError } from "./Problem.js"

export class IdempotencyConflict extends ProblemError<IdempotencyConflict>()(
  "idempotency_conflict",
  409,
  "Idempotency key reused with a different request"
) {}

export class MachineNotRunning
  extends ProblemError<MachineNotRunning>()("machine_not_running", 409, "Machine not running")
{}

export class MachineNotCreated
  extends ProblemError<MachineNotCreated>()("machine_not_created", 409, "Machine not created")
{}

export class MachineDeleted extends ProblemError<MachineDeleted>()("machine_deleted", 409, "Machine deleted") {}

export class MachineNotStopped
  extends ProblemError<MachineNotStopped>()("machine_not_stopped", 409, "Machine not stopped")
{}

/**
 * A request that needs the machine's live host (a live stream, a terminal, the port proxy, an agent
 * turn, its stats) while no node holds that host: answered with `Retry-After` (docs/scale-out.md).
 */
export class HostUnavailable extends ProblemError<HostUnavailable>()(
  "host_unavailable",
  503,
  "The machine's host is not available now"
) {}

export class NameTaken
  extends ProblemError<NameTaken>()("name_taken", 409, "Another live machine of the organization has this name")
{}

export class LimitExceeded extends ProblemError<LimitExceeded>()("limit_exceeded", 429, "Machine limit reached") {}

export class RuntimeUnavailable extends ProblemError<RuntimeUnavailable>()(
  "runtime_unavailable",
  503,
  "Machines are not available on this server now"
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
  machine: M,
  kind: "exec" | "read_file" | "write_file" = "exec"
): Effect.Effect<M, MachineNotRunning | MachineNotCreated | MachineDeleted> => {
  const conflict = conflictOf("exec", machine.state)
  if (conflict === undefined) return Effect.succeed(machine)
  if (conflict === "machine_not_stopped") return Effect.dieMessage("exec never needs a stopped machine")
  return Effect.fail(new machineConflicts[conflict]({ detail: conflictDetail(kind, conflict, machine.state) }))
}

/** Something in the machine did not answer as needed: the port proxy found nothing listening. */
export class GuestActionFailed
  extends ProblemError<GuestActionFailed>()("guest_action_failed", 502, "The machine did not answer")
{}
