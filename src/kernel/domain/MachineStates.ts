/**
 * What each operation kind needs from the machine and what it leaves behind, as one table. The
 * same table answers two questions: at accept time, against the state the machine will have once
 * its accepted operations have run (409 at once), and at the operation's turn, against the state
 * it really has (the operation fails with the same code).
 */
import { Schema } from "effect"

export const MachineState = Schema.Literal(
  "creating",
  "stopped",
  "starting",
  "running",
  "stopping",
  "restarting",
  "deleting",
  "deleted",
  "failed"
)
export type MachineState = typeof MachineState.Type

export const MachineSize = Schema.Literal("small", "default", "large")
export type MachineSize = typeof MachineSize.Type

/** Why a machine was last stopped by svc rather than by its owner. */
export const StopReason = Schema.Literal(
  "api",
  "auto_stop",
  "billing",
  "idle_sleep",
  "suspension",
  "abuse",
  "organization_deleted"
)
export type StopReason = typeof StopReason.Type

export const OperationKind = Schema.Literal(
  "create",
  "start",
  "stop",
  "restart",
  "delete",
  "exec",
  "write_file",
  "read_file",
  "install_ssh_key",
  "set_internet_access",
  "apply_environment",
  "expose_port",
  "unexpose_port",
  "snapshot",
  "fork",
  "restore"
)
export type OperationKind = typeof OperationKind.Type

export const OperationStatus = Schema.Literal(
  "pending",
  "running",
  "succeeded",
  "failed",
  "uncertain",
  "correlation_miss"
)
export type OperationStatus = typeof OperationStatus.Type

/** The kinds that make a new machine (a fork and a restore run on the machine they make). */
export const makesMachine = (kind: OperationKind): kind is "create" | "fork" | "restore" =>
  kind === "create" || kind === "fork" || kind === "restore"

export type MachineConflict = "machine_not_running" | "machine_not_created" | "machine_deleted" | "machine_not_stopped"

/** The settled states an operation can require or leave. */
type Settled = "stopped" | "running" | "deleted" | "failed"

const settledOf = (state: MachineState): Settled => {
  switch (state) {
    case "running":
    case "starting":
    case "restarting":
      return "running"
    case "deleted":
    case "deleting":
      return "deleted"
    case "failed":
      return "failed"
    case "creating":
    case "stopped":
    case "stopping":
      return "stopped"
  }
}

interface Rule {
  /** Settled states in which the kind may run. */
  readonly from: ReadonlyArray<Settled>
  /** The state it leaves, or "same". */
  readonly to: Settled | "same"
  /** The conflict when the machine is settled elsewhere (deleted and failed have their own codes). */
  readonly otherwise: MachineConflict
}

const needsRunning: Rule = { from: ["running"], to: "same", otherwise: "machine_not_running" }

export const rules: Record<Exclude<OperationKind, "create">, Rule> = {
  start: { from: ["stopped", "running"], to: "running", otherwise: "machine_not_stopped" },
  stop: { from: ["stopped", "running"], to: "stopped", otherwise: "machine_not_running" },
  restart: { from: ["running"], to: "running", otherwise: "machine_not_running" },
  delete: { from: ["stopped", "running", "failed"], to: "deleted", otherwise: "machine_not_stopped" },
  exec: needsRunning,
  write_file: needsRunning,
  read_file: needsRunning,
  install_ssh_key: needsRunning,
  // Recorded on a stopped or running machine; the network namespace follows it at the next boot.
  set_internet_access: { from: ["stopped", "running"], to: "same", otherwise: "machine_not_stopped" },
  // Moves the machine to an environment version; running processes see it from the next boot.
  apply_environment: { from: ["stopped", "running"], to: "same", otherwise: "machine_not_stopped" },
  // The list of exposed ports is a setting kept with the machine; the proxy reads it per request.
  expose_port: { from: ["stopped", "running"], to: "same", otherwise: "machine_not_stopped" },
  unexpose_port: { from: ["stopped", "running"], to: "same", otherwise: "machine_not_stopped" },
  // A snapshot (or a template) reads the disk of a stopped machine.
  snapshot: { from: ["stopped"], to: "same", otherwise: "machine_not_stopped" },
  // Fork and restore are checked against their source machine at accept time; they run on the new one.
  fork: { from: ["stopped", "running"], to: "same", otherwise: "machine_not_stopped" },
  restore: { from: ["stopped", "running", "deleted", "failed"], to: "same", otherwise: "machine_not_stopped" }
}

/** The conflict of running `kind` on a machine in `state`, if any. */
export const conflictOf = (
  kind: Exclude<OperationKind, "create">,
  state: MachineState
): MachineConflict | undefined => {
  const settled = settledOf(state)
  const rule = rules[kind]
  if (rule.from.includes(settled)) return undefined
  if (settled === "deleted") return "machine_deleted"
  // Still being created (or its create was cancelled in the start queue), or its create failed.
  if (state === "creating" || settled === "failed") return "machine_not_created"
  return rule.otherwise
}

/** The state after `kind` has run on a machine in `state` (assuming it succeeds). */
export const projectedAfter = (kind: Exclude<OperationKind, "create">, state: MachineState): MachineState => {
  const to = rules[kind].to
  return to === "same" ? state : to
}

const needs: Record<MachineConflict, string> = {
  machine_not_running: "a running machine",
  machine_not_stopped: "a stopped machine",
  machine_deleted: "a machine that is not deleted",
  machine_not_created: "a machine that was created"
}

const advice: Partial<Record<MachineConflict, string>> = {
  machine_not_running: " Start it first.",
  machine_not_stopped: " Stop it first."
}

/**
 * The sentence of a conflict: what `kind` needs, the state the machine is in and, when its accepted
 * operations will move it elsewhere, the state it will be in (`projected`).
 */
export const conflictDetail = (
  kind: Exclude<OperationKind, "create">,
  conflict: MachineConflict,
  current: MachineState,
  projected: MachineState = current
): string => {
  const what = kind.replaceAll("_", " ")
  const label = what.charAt(0).toUpperCase() + what.slice(1)
  const pending = projected === current || settledOf(projected) === settledOf(current)
    ? ""
    : ` and will be ${projected} once its accepted operations have run`
  if (conflict === "machine_deleted") {
    if (current === "deleted") return `The machine was deleted; ${what} needs ${needs[conflict]}.`
    if (current === "deleting") return `The machine is being deleted; ${what} needs ${needs[conflict]}.`
    return `The machine is ${current}${pending} (a delete was accepted); ${what} needs ${needs[conflict]}.`
  }
  if (conflict === "machine_not_created") {
    return current === "creating" && settledOf(projected) !== "failed"
      ? `The machine is still being created; ${what} needs ${needs[conflict]}. Wait for its create operation.`
      : `The machine's create failed (it is ${current}${pending}); delete it and create another.`
  }
  return `${label} needs ${needs[conflict]}; the machine is ${current}${pending}.${
    pending === "" ? advice[conflict] ?? "" : ""
  }`
}
