/** The error lists several endpoints declare, each written once: `errors: [...acceptErrors, NameTaken]`. */
import { ResourceNotFound } from "./Errors.js"
import {
  HostUnavailable,
  IdempotencyConflict,
  MachineDeleted,
  MachineNotCreated,
  MachineNotRunning,
  MachineNotStopped,
  RuntimeUnavailable
} from "./MachineErrors.js"

/** Every route that accepts work: an unknown machine, a reused key, a host that cannot run machines now. */
export const acceptErrors = [ResourceNotFound, IdempotencyConflict, RuntimeUnavailable] as const

/** A route that needs a running machine (src/kernel/domain/MachineStates.ts `conflictOf`). */
export const notRunningErrors = [MachineNotRunning, MachineNotCreated, MachineDeleted] as const

/** Every state conflict a machine change can answer. */
export const stateErrors = [...notRunningErrors, MachineNotStopped] as const

/** A route served by the node of the machine's host (docs/scale-out.md "Forwarding"): 503 while it has none. */
export const liveHostErrors = [HostUnavailable] as const
