/** Operations (api.md "Operations", extensions.md §7): read, list per machine, cancel, events. */
import { HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { OperationStatus, StopReason } from "../kernel/domain/MachineStates.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { EventStream, NullableTimestamp, QueryParams, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { pageFields } from "../kernel/http/Pagination.js"
import { policy } from "../kernel/http/Policy.js"
import { ExecResult, FileRange } from "../runtime/Outcome.js"

export const OperationDto = Schema.Struct({
  id: Uuid,
  machine_id: Uuid,
  kind: Schema.String,
  status: OperationStatus,
  attempt_count: Schema.Int,
  error_code: Schema.NullOr(Schema.String),
  completed_but_unchanged: Schema.Boolean,
  stop_reason: Schema.NullOr(StopReason),
  exec_result: Schema.NullOr(ExecResult),
  file_ranges: Schema.NullOr(Schema.Array(FileRange)),
  starting_soon: Schema.NullOr(Schema.Struct({
    operation_id: Uuid,
    position: Schema.Int,
    priority: Schema.String,
    reason: Schema.String,
    queued_at: Timestamp,
    expires_at: Timestamp
  })),
  created_at: Timestamp,
  started_at: NullableTimestamp,
  finished_at: NullableTimestamp
}).annotations({ identifier: "Operation" })
export type OperationDto = typeof OperationDto.Type

export const OperationList = Schema.Struct({
  items: Schema.Array(OperationDto),
  next_cursor: Schema.NullOr(Schema.String)
})

const OperationPath = Schema.Struct({ id: Uuid })

export class OperationsApi extends HttpApiGroup.make("operations")
  .add(
    Endpoint.get("get", "/v1/operations/:id", { policy: policy("R", "header"), errors: [ResourceNotFound] })
      .setPath(OperationPath)
      .addSuccess(OperationDto)
  )
  .add(
    Endpoint.get("listForMachine", "/v1/machines/:id/operations", {
      policy: policy("R", "header"),
      errors: [ResourceNotFound]
    })
      .setPath(OperationPath)
      .setUrlParams(QueryParams(pageFields(Schema.String)))
      .addSuccess(OperationList)
  )
  .add(
    Endpoint.post("cancel", "/v1/operations/:id/cancel", { policy: policy("U", "header"), errors: [ResourceNotFound] })
      .setPath(OperationPath)
      .addSuccess(OperationDto, { status: 202 })
  )
  .add(
    Endpoint.get("events", "/v1/operations/:id/events", { policy: policy("R", "header"), errors: [ResourceNotFound] })
      .setPath(OperationPath)
      .setHeaders(Schema.Struct({
        "last-event-id": Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()))
      }))
      .addSuccess(EventStream)
  )
  .middleware(Authorization)
{}
