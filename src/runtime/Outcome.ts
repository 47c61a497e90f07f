/**
 * What carrying out an operation ends in, before the actor settles it (src/runtime/Apply.ts), and
 * the exec and file results it carries (the same shapes the API answers in OperationDto).
 */
import { type Effect, Schema } from "effect"
import type { DomainEvent } from "../kernel/events/DomainEvents.js"
import type { MachinePatch } from "./MachinesRepo.js"
export const ExecResult = Schema.Struct({
  exit_code: Schema.Int,
  stdout_base64: Schema.String,
  stderr_base64: Schema.String,
  timed_out: Schema.Boolean,
  cancelled: Schema.Boolean,
  truncated: Schema.Boolean
})

export type ExecResult = typeof ExecResult.Type

export const FileRange = Schema.Struct({
  path: Schema.String,
  offset: Schema.Int,
  size: Schema.Int,
  data_base64: Schema.String,
  missing: Schema.Boolean
})

export type FileRange = typeof FileRange.Type

export type Outcome =
  | {
    readonly status: "succeeded"
    readonly unchanged: boolean
    readonly machine: MachinePatch
    readonly execResult?: ExecResult
    readonly fileRanges?: ReadonlyArray<FileRange>
    readonly also?: Settles
  }
  | {
    readonly status: "failed"
    readonly errorCode: string
    readonly machine?: MachinePatch
    readonly execResult?: ExecResult
    readonly also?: Settles
  }
  | { readonly status: "correlation_miss"; readonly machine?: MachinePatch; readonly errorCode?: string }
  | { readonly status: "uncertain"; readonly reason: string }

/**
 * Rows other than the machine's that settle with the operation, in the same transaction (a
 * snapshot's row becomes `ready` exactly when its push succeeds), and the events they make (its
 * `snapshot.ready`), recorded in the outbox with the settle. Run by the actor, not here.
 */
export type Settles = Effect.Effect<ReadonlyArray<DomainEvent>>
