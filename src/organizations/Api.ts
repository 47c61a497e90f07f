import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Preset, Role } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"

export const MemberDto = Schema.Struct({
  user_id: Uuid,
  email: Schema.String,
  role: Role,
  joined_at: Timestamp,
  max_running_machines: Schema.NullOr(Schema.Int),
  running_machines: Schema.Int,
  usage_this_month: Schema.Struct({ cost_micros: Schema.Int, seconds: Schema.Int })
})

export const MemberList = Schema.Struct({ items: Schema.Array(MemberDto) })

export const ActiveOrganizationDto = Schema.Struct({ active_organization_id: Schema.NullOr(Uuid) })

export const MeDto = Schema.Struct({
  user: Schema.Struct({ id: Uuid, email: Schema.String, created_at: Timestamp }),
  organizations: Schema.Array(Schema.Struct({ id: Uuid, name: Schema.String, role: Role, joined_at: Timestamp })),
  active_organization_id: Schema.NullOr(Uuid),
  credential: Schema.Struct({
    kind: Schema.Literal("api_key", "session"),
    organization_id: Schema.NullOr(Uuid),
    preset: Schema.NullOr(Preset)
  })
})

export class MembersApi extends HttpApiGroup.make("members")
  .add(
    Endpoint.get("list", "/v1/organizations/:organization_id/members", {
      summary: "List members",
      description: "The organization's members with their roles, running machines and this month's usage. 404 for " +
        "an organization the caller is not a member of, or another organization than the key's.",
      policy: policy("R", "path"),
      errors: [ResourceNotFound]
    })
      .setPath(Schema.Struct({ organization_id: Uuid }))
      .addSuccess(MemberList)
  )
  .add(
    Endpoint.get("me", "/v1/me", {
      summary: "Who am I",
      description: "The signed-in user (or the key's creator), their organizations and roles, the active " +
        "organization, and the credential used.",
      policy: policy("R")
    })
      .addSuccess(MeDto)
  )
  .add(
    Endpoint.put("setActiveOrganization", "/v1/me/active-organization", {
      summary: "Set the active organization",
      description: "The organization a session acts in when it sends no `X-Organization-ID`; one the caller " +
        "belongs to, or null to clear it.",
      policy: policy("S"),
      errors: [ResourceNotFound]
    })
      .setPayload(RequestBody({ organization_id: Schema.NullOr(Uuid) }))
      .addSuccess(ActiveOrganizationDto)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Members and organizations: who belongs, and which organization a session acts in.")
{}
