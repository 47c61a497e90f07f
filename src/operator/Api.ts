/**
 * The operator's routes (access O: the `X-Svc-Operator-Token` header only, 404 while
 * `SVC_OPERATOR_TOKEN` is unset): suspend and resume an organization, review the abuse guard's
 * flags, list the hosts. Every action is written to the audit log with the operator's name and reason.
 */
import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../kernel/http/Authorization.js"
import { NullableTimestamp, QueryParams, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"

const Operator = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
const Reason = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(500))

export const OperatorActionRequest = RequestBody({ operator: Operator, reason: Reason })

export const SuspensionDto = Schema.Struct({
  organization_id: Uuid,
  already_suspended: Schema.Boolean,
  /** The suspension's reason, shown to operators only. */
  reason: Schema.String,
  suspended_at: Timestamp,
  machines_stopping: Schema.Int,
  channels_revoked: Schema.Int,
  tickets_revoked: Schema.Int
}).annotations({ identifier: "SuspensionDto" })

export const ResumeDto = Schema.Struct({ organization_id: Uuid, resumed: Schema.Boolean }).annotations({
  identifier: "ResumeDto"
})

export const FlagResolution = Schema.Literal("dismissed", "confirmed").annotations({
  identifier: "FlagResolutionDto"
})

export const AbuseFlagDto = Schema.Struct({
  id: Uuid,
  organization_id: Uuid,
  machine_id: Uuid,
  stop_operation_id: Uuid,
  kind: Schema.Literal("sustained_cpu"),
  action: Schema.Literal("stopped"),
  resolution: Schema.NullOr(FlagResolution),
  resolution_note: Schema.NullOr(Schema.String),
  /** The lowest CPU use sampled in the window, in thousandths of the machine size's CPUs. */
  min_cpu_permille: Schema.Int,
  window_seconds: Schema.Int,
  window_start: Timestamp,
  created_at: Timestamp,
  resolved_at: NullableTimestamp
}).annotations({ identifier: "AbuseFlagDto" })

export const AbuseFlagPage = Schema.Struct({ items: Schema.Array(AbuseFlagDto) }).annotations({
  identifier: "AbuseFlagPage"
})

export const AbuseFlagStatus = Schema.Literal("open", "all").annotations({ identifier: "AbuseFlagStatusDto" })

export const AbuseFlagsParams = QueryParams({
  status: Schema.optionalWith(AbuseFlagStatus, { default: () => "open" as const }),
  limit: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 500)), {
    default: () => 100
  })
})

export const ResolveAbuseFlagRequest = RequestBody({
  note: Reason,
  operator: Operator,
  resolution: FlagResolution
})

export const HostDto = Schema.Struct({
  host_id: Schema.String,
  /** Where the other nodes reach the host's node. */
  internal_url: Schema.String,
  /** `live` while a node holds the host's lease; `expired` once it ended (its machines wait). */
  state: Schema.Literal("live", "expired"),
  lease_expires_at: Timestamp,
  /** Machines that run, or will once their accepted operations have run. */
  running_machines: Schema.Int,
  /** `SVC_HOST_CAPACITY` of its node; null: unlimited. */
  capacity: Schema.NullOr(Schema.Int),
  /** The svc version of the node that last took the host. */
  version: Schema.String
}).annotations({ identifier: "HostDto" })

export const HostList = Schema.Struct({ items: Schema.Array(HostDto) }).annotations({ identifier: "HostList" })

const OrganizationPath = Schema.Struct({ organization_id: Uuid })
const FlagPath = Schema.Struct({ flag_id: Uuid })
const operatorOnly = policy("O")

export class OperatorApi extends HttpApiGroup.make("operator")
  .add(
    Endpoint.post("suspend", "/v1/operator/organizations/:organization_id/suspend", {
      summary: "Suspend an organization",
      description: "Stops every running machine of the organization (`stop_reason` `suspension`), revokes its " +
        "unused terminal tickets and closes its open terminals; until it is resumed, creating, starting, " +
        "restarting, forking and restoring machines, commands, file operations, terminals and agent prompts " +
        "answer 403 `organization_suspended`, while reads keep working and no data is removed. Suspending a " +
        "suspended organization changes nothing (`already_suspended` true, with the first suspension's reason " +
        "and time). Written to the audit log with `operator` and `reason`.",
      policy: operatorOnly,
      errors: [ResourceNotFound]
    })
      .setPath(OrganizationPath)
      .setPayload(OperatorActionRequest)
      .addSuccess(SuspensionDto)
  )
  .add(
    Endpoint.post("resume", "/v1/operator/organizations/:organization_id/resume", {
      summary: "Resume a suspended organization",
      description: "Lifts the suspension: members may use machines again. Stopped machines stay stopped until " +
        "members start them. `resumed` is false when the organization was not suspended (nothing changes). " +
        "Written to the audit log with `operator` and `reason`.",
      policy: operatorOnly,
      errors: [ResourceNotFound]
    })
      .setPath(OrganizationPath)
      .setPayload(OperatorActionRequest)
      .addSuccess(ResumeDto)
  )
  .add(
    Endpoint.get("listAbuseFlags", "/v1/operator/abuse-flags", {
      summary: "List abuse flags",
      description: "The abuse guard's flags, newest first: the open ones (`status` `open`, the default) or all. " +
        "A flag names the machine the guard stopped (`stop_operation_id`), the window it watched and the " +
        "lowest CPU use sampled in it.",
      policy: operatorOnly
    })
      .setUrlParams(AbuseFlagsParams)
      .addSuccess(AbuseFlagPage)
  )
  .add(
    Endpoint.post("resolveAbuseFlag", "/v1/operator/abuse-flags/:flag_id/resolve", {
      summary: "Resolve an abuse flag",
      description: "Closes an open flag as `dismissed` or `confirmed`, with the operator's note. A resolved flag " +
        "is answered as it is, unchanged. Written to the audit log with `operator` and `note`.",
      policy: operatorOnly,
      errors: [ResourceNotFound]
    })
      .setPath(FlagPath)
      .setPayload(ResolveAbuseFlagRequest)
      .addSuccess(AbuseFlagDto)
  )
  .add(
    Endpoint.get("listHosts", "/v1/operator/hosts", {
      summary: "List hosts",
      description: "Every host of the service by id, with its node's lease (`live` or `expired`), its running " +
        "machines (those that will run once their accepted operations have run included) and its capacity. " +
        "On one host, that host.",
      policy: operatorOnly
    })
      .addSuccess(HostList)
  )
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Operator: suspend and resume organizations, review the abuse guard's flags, list the hosts. Only the operator token " +
      "(`X-Svc-Operator-Token`) opens these routes; they answer 404 while none is configured."
  )
{}
