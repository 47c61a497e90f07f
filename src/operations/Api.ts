/** Operations (api.md "Operations", extensions.md §7): read, list per machine, cancel, events. */
import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { OperationStatus, StopReason } from "../kernel/domain/MachineStates.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { EventStream, NullableTimestamp, QueryParams, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { liveHostErrors } from "../kernel/http/ErrorLists.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { pageFields } from "../kernel/http/Pagination.js"
import { allowedWhileSuspended, policy } from "../kernel/http/Policy.js"
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
    Endpoint.get("get", "/v1/operations/:id", {
      summary: "Get an operation",
      description: "An operation's status (`pending`, `running`, `succeeded`, `failed`, `uncertain`, " +
        "`correlation_miss`) and result. `succeeded` only once the expected state was observed on the host; " +
        "`failed` means it definitely did not happen (`error_code` says why); `uncertain` is retried with the " +
        "same request until it settles; `correlation_miss` and `completed_but_unchanged` mean not done. Poll " +
        "every 250 ms growing to 2 s, or follow its events.",
      policy: policy("R", "header", Roles.anyMember),
      errors: [ResourceNotFound]
    })
      .setPath(OperationPath)
      .addSuccess(OperationDto)
  )
  .add(
    Endpoint.get("listForMachine", "/v1/machines/:id/operations", {
      summary: "List a machine's operations",
      description: "The machine's operations, newest first, a page at a time (`next_cursor`).",
      policy: policy("R", "header", Roles.anyMember),
      errors: [ResourceNotFound]
    })
      .setPath(OperationPath)
      .setUrlParams(QueryParams(pageFields(Schema.String)))
      .addSuccess(OperationList)
  )
  .add(
    Endpoint.post("cancel", "/v1/operations/:id/cancel", {
      summary: "Cancel an operation",
      description: "Ends an operation that is not terminal, in bounded time, and frees the machine for the next " +
        "one: a pending operation fails with `cancelled`; a running exec is killed (`exec_result.cancelled`); " +
        "another running operation gets a short grace to finish, and it and an uncertain one end " +
        "`correlation_miss` with `error_code` `cancelled` (whether the change happened cannot be known). A " +
        "terminal operation is answered as it is. Takes no body.",
      policy: allowedWhileSuspended(policy("U", "header", Roles.machineChangers)),
      errors: [ResourceNotFound]
    })
      .setPath(OperationPath)
      .addSuccess(OperationDto, { status: 202 })
  )
  .add(
    Endpoint.get("events", "/v1/operations/:id/events", {
      summary: "Follow an operation's events",
      description: "Server-sent events: the persisted history, then live events until the operation is terminal. " +
        "Events `status` (`{status, attempt_count, error_code}`), `output` (an exec's `{stream, data_base64}`), " +
        "`progress` (`{done_bytes, total_bytes}`), and a final `end`. Each `id` is persisted and monotonic; " +
        "`Last-Event-ID` resumes strictly after it.",
      policy: policy("R", "header", Roles.anyMember),
      errors: [ResourceNotFound, ...liveHostErrors]
    })
      .setPath(OperationPath)
      .setHeaders(Schema.Struct({
        "last-event-id": Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()))
      }))
      .addSuccess(EventStream)
  )
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Operations: every change to a machine is one. Read its status and result, follow its events, cancel it."
  )
{}
