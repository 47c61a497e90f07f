/**
 * Snapshots and templates (api.md "Snapshots and templates"): push, list, latest, get, delete,
 * bulk delete and delete by source; templates by name or id; fork and restore (new machines from a
 * machine's disk or snapshot). docs/snapshots.md says what the store behind them does.
 */
import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { moneyErrors } from "../kernel/http/BillingErrors.js"
import { NullableTimestamp, QueryParams, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { IdempotencyHeaders } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { acceptErrors, stateErrors } from "../kernel/http/ErrorLists.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { LimitExceeded } from "../kernel/http/MachineErrors.js"
import { NameTaken } from "../kernel/http/MachineErrors.js"
import { pageFields } from "../kernel/http/Pagination.js"
import { allowedWhileSuspended, policy } from "../kernel/http/Policy.js"
import type { ProblemClass } from "../kernel/http/Problem.js"
import { machineChange, MachineName } from "../machines/Api.js"
import { NoSnapshot, SnapshotLimitReached, SnapshotPending, TemplateLimitReached, TemplateNameTaken } from "./Errors.js"

export { NoSnapshot, SnapshotLimitReached, SnapshotPending, TemplateLimitReached, TemplateNameTaken }

export const SnapshotTier = Schema.Literal("warm", "cold")
export const SnapshotSource = Schema.Literal("api", "automatic").annotations({ identifier: "SnapshotSource" })
export const SnapshotStatus = Schema.Literal("pending", "ready", "failed")

export const SnapshotDto = Schema.Struct({
  id: Uuid,
  machine_id: Uuid,
  operation_id: Uuid,
  name: Schema.NullOr(Schema.String),
  status: SnapshotStatus,
  tier: SnapshotTier,
  source: Schema.NullOr(SnapshotSource),
  size_bytes: Schema.Int,
  uploaded_bytes: Schema.Int,
  generation: Schema.Int,
  disk_synced: Schema.Boolean,
  manifest: Schema.NullOr(Schema.String),
  parent_manifest: Schema.NullOr(Schema.String),
  error_code: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  completed_at: NullableTimestamp
}).annotations({ identifier: "Snapshot" })
export type SnapshotDto = typeof SnapshotDto.Type

export const SnapshotAccepted = Schema.Struct({
  machine_id: Uuid,
  operation_id: Uuid,
  operation_url: Schema.String,
  snapshot_id: Uuid,
  snapshot_url: Schema.String,
  status: Schema.String
}).annotations({ identifier: "SnapshotAccepted" })
export type SnapshotAccepted = typeof SnapshotAccepted.Type

export const ReadySnapshotDto = Schema.Struct({
  id: Uuid,
  created_at: Timestamp,
  completed_at: NullableTimestamp,
  size_bytes: Schema.Int,
  source: Schema.NullOr(SnapshotSource),
  tier: SnapshotTier
}).annotations({ identifier: "ReadySnapshot" })

export const SnapshotPage = Schema.Struct({
  items: Schema.Array(SnapshotDto),
  next_cursor: Schema.NullOr(Uuid)
}).annotations({ identifier: "SnapshotPage" })

export const DeleteResult = Schema.Literal("deleted", "not_found", "pending", "template")
export type DeleteResult = typeof DeleteResult.Type

export const SnapshotDeleteResults = Schema.Struct({
  deleted: Schema.Int,
  results: Schema.Array(Schema.Struct({ snapshot_id: Schema.String, result: DeleteResult }))
}).annotations({ identifier: "SnapshotDeleteResults" })
export type SnapshotDeleteResults = typeof SnapshotDeleteResults.Type

/** A fork: a new machine whose disk is a copy of the source's (stopped or running). */
export const ForkRequest = RequestBody({
  name: MachineName,
  start: Schema.optionalWith(Schema.Boolean, { default: () => true })
})

/** A restore: a new machine from a snapshot of the machine, its latest ready one when none is named. */
export const RestoreRequest = RequestBody({
  name: MachineName,
  snapshot_id: Schema.optionalWith(Schema.NullOr(Uuid), { default: () => null }),
  start: Schema.optionalWith(Schema.Boolean, { default: () => true })
})

export const TemplateName = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/, {
    message: () => "first a-z or 0-9, then up to 63 of a-z, 0-9, '.', '_' and '-'"
  })
)

export const PushRequest = RequestBody({
  tier: Schema.optionalWith(Schema.NullOr(SnapshotTier), { default: () => null })
})

export const BulkDeleteRequest = RequestBody({
  snapshot_ids: Schema.Array(Uuid).pipe(Schema.minItems(1), Schema.maxItems(100))
})

export const TemplateRequest = RequestBody({ machine_id: Uuid, name: TemplateName })

const PageParams = QueryParams(pageFields(Uuid))

const MachinePath = Schema.Struct({ id: Uuid })
const SnapshotPath = Schema.Struct({ snapshot_id: Uuid })
const TemplatePath = Schema.Struct({ template: Schema.String })

/** Changing routes: Owner, Admin, Operator (api.md). */
const changers = Roles.machineChangers

/** A push or a template save: an operation on the machine, so the errors of any machine change, and 202 with its snapshot. */
const snapshotChange = <const Name extends string, const Extra extends ReadonlyArray<ProblemClass<any>>>(
  name: Name,
  path: `/v1/${string}`,
  text: { readonly summary: string; readonly description: string },
  extra: Extra
) =>
  Endpoint.post(name, path, {
    ...text,
    policy: allowedWhileSuspended(policy("U", "header", changers)),
    errors: [...acceptErrors, ...stateErrors, LimitExceeded, ...moneyErrors, ...extra]
  })
    .setHeaders(IdempotencyHeaders)
    .addSuccess(SnapshotAccepted, { status: 202 })

export class SnapshotsApi extends HttpApiGroup.make("snapshots")
  .add(
    snapshotChange("push", "/v1/machines/:id/snapshots", {
      summary: "Snapshot a stopped machine",
      description: "Pushes a snapshot of the stopped machine's disk (`tier` default `warm`). An operation " +
        "([IDEM]): answers 202 with the snapshot, `pending` until the push settles `ready` or `failed`."
    }, [SnapshotLimitReached])
      .setPath(MachinePath)
      .setPayload(PushRequest)
  )
  .add(
    Endpoint.get("list", "/v1/machines/:id/snapshots", {
      summary: "List a machine's snapshots",
      description: "A page at a time (`limit` 1-100, default 50; `cursor` the previous page's last id).",
      policy: policy("R", "header", Roles.anyMember),
      errors: [ResourceNotFound]
    })
      .setPath(MachinePath)
      .setUrlParams(PageParams)
      .addSuccess(SnapshotPage)
  )
  .add(
    Endpoint.get("latest", "/v1/machines/:id/snapshots/latest", {
      summary: "Get a machine's latest snapshot",
      description: "The newest ready snapshot; pending and failed pushes and templates are skipped. 404 " +
        "`no_snapshot` when there is none.",
      policy: policy("R", "header", Roles.anyMember),
      errors: [ResourceNotFound, NoSnapshot]
    })
      .setPath(MachinePath)
      .addSuccess(ReadySnapshotDto)
  )
  .add(
    Endpoint.del("deleteForMachine", "/v1/machines/:id/snapshots", {
      summary: "Delete a machine's snapshots",
      description: "Every snapshot of the machine, or only `source`'s; oldest first. Templates and pending pushes " +
        "are kept and reported in `results`. Takes no body.",
      policy: allowedWhileSuspended(policy("U", "header", changers)),
      errors: [ResourceNotFound]
    })
      .setPath(MachinePath)
      .setUrlParams(Schema.Struct({ source: Schema.optional(SnapshotSource) }))
      .addSuccess(SnapshotDeleteResults)
  )
  .add(
    Endpoint.get("get", "/v1/snapshots/:snapshot_id", {
      summary: "Get a snapshot",
      description: "One snapshot or template.",
      policy: policy("R", "header", Roles.anyMember),
      errors: [ResourceNotFound]
    })
      .setPath(SnapshotPath)
      .addSuccess(SnapshotDto)
  )
  .add(
    Endpoint.del("delete", "/v1/snapshots/:snapshot_id", {
      summary: "Delete a snapshot",
      description: "Removes a ready or failed snapshot from the product; the store collects its data. 409 " +
        "`snapshot_pending` while its push has not settled. Takes no body.",
      policy: allowedWhileSuspended(policy("U", "header", changers)),
      errors: [ResourceNotFound, SnapshotPending]
    })
      .setPath(SnapshotPath)
      .addSuccess(Schema.Void, { status: 204 })
  )
  .add(
    Endpoint.post("bulkDelete", "/v1/snapshots/bulk-delete", {
      summary: "Delete snapshots in bulk",
      description: "1-100 `snapshot_ids` (duplicates reported once). Answers 200 even when some were kept: each " +
        "id's result is `deleted`, `not_found`, `pending` or `template`.",
      policy: allowedWhileSuspended(policy("U", "header", changers))
    })
      .setPayload(BulkDeleteRequest)
      .addSuccess(SnapshotDeleteResults)
  )
  .add(
    snapshotChange("createTemplate", "/v1/templates", {
      summary: "Save a stopped machine as a template",
      description: "A warm push saved under `name` (first a-z or 0-9, then up to 63 of a-z, 0-9, `.`, `_`, `-`; " +
        "unique among the organization's templates). An operation ([IDEM]): answers 202 with the snapshot, " +
        "`pending` until it settles."
    }, [TemplateNameTaken, TemplateLimitReached])
      .setPayload(TemplateRequest)
  )
  .add(
    Endpoint.get("listTemplates", "/v1/templates", {
      summary: "List templates",
      description: "The organization's templates, a page at a time (`limit` 1-100, default 50; `cursor`).",
      policy: policy("R", "header", Roles.anyMember)
    })
      .setUrlParams(PageParams)
      .addSuccess(SnapshotPage)
  )
  .add(
    Endpoint.get("getTemplate", "/v1/templates/:template", {
      summary: "Get a template",
      description: "`template` is a name or an id.",
      policy: policy("R", "header", Roles.anyMember),
      errors: [ResourceNotFound]
    })
      .setPath(TemplatePath)
      .addSuccess(SnapshotDto)
  )
  .add(
    Endpoint.del("deleteTemplate", "/v1/templates/:template", {
      summary: "Delete a template",
      description: "The name is free again. 409 `snapshot_pending` while its save has not settled. Takes no body.",
      policy: allowedWhileSuspended(policy("U", "header", changers)),
      errors: [ResourceNotFound, SnapshotPending]
    })
      .setPath(TemplatePath)
      .addSuccess(Schema.Void, { status: 204 })
  )
  .add(
    machineChange("fork", "post", "/v1/machines/:id/fork", {
      summary: "Fork a machine",
      description: "A new machine whose disk is a copy of this one's, stopped or running. `machine_id` of the " +
        "answer is the new machine.",
      policy: policy("C", "header", Roles.machineChangers),
      errors: [NameTaken]
    })
      .setPayload(ForkRequest)
  )
  .add(
    machineChange("restore", "post", "/v1/machines/:id/restore", {
      summary: "Restore a snapshot as a new machine",
      description: "A new machine from a snapshot of this machine: `snapshot_id`, or its latest ready snapshot " +
        "when none is named (404 `no_snapshot` when it has none). `machine_id` of the answer is the new machine.",
      policy: policy("C", "header", Roles.machineChangers),
      errors: [NameTaken, NoSnapshot, SnapshotPending]
    })
      .setPayload(RestoreRequest)
  )
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Snapshots and templates: push snapshots of stopped machines, save templates, list and delete them; " +
      "fork a machine, restore a snapshot as a new machine."
  )
{}
