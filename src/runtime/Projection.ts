/**
 * The state a machine will have once its open operations have run, from its real state: what
 * requests are checked against at accept time. Recomputed whenever an operation does not end as
 * expected (failed, cancelled, correlation miss), so a failed start does not leave later requests
 * believing the machine will run.
 */
import { type MachineState, makesMachine, type OperationKind, projectedAfter } from "../kernel/domain/MachineStates.js"

export const project = (
  state: MachineState,
  open: ReadonlyArray<{ readonly kind: OperationKind; readonly request: string }>
): MachineState =>
  open.reduce<MachineState>((current, operation) => {
    if (makesMachine(operation.kind)) return JSON.parse(operation.request).start === false ? "stopped" : "running"
    return projectedAfter(operation.kind, current)
  }, state)
