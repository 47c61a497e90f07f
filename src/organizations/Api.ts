/**
 * The organizations area's groups: `members` (who belongs, roles, ownership, deletion, the active
 * organization) and `invitations`.
 */
import { HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { EmailAddress } from "../identity/Api.js"
import { Preset, Role, Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { QueryParams, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"
import {
  AlreadyMember,
  InvitationClosed,
  InvitationEmailMismatch,
  InvitationNotSent,
  InvitationsUnavailable,
  LastOwner,
  RecentAuthRequired,
  SubscriptionActive
} from "./Errors.js"

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

export const MachineCap = Schema.Int.pipe(Schema.between(0, 10000))

export const UpdateMemberRequest = RequestBody({
  max_running_machines: Schema.optional(
    Schema.NullOr(MachineCap).annotations({
      description: "0-10000; null removes the member's cap; absent leaves it"
    })
  ),
  role: Schema.optional(Schema.NullOr(Role).annotations({ description: "The new role; null or absent leaves it" }))
})

export const MemberRemovedDto = Schema.Struct({
  user_id: Uuid,
  api_keys_revoked: Schema.Int,
  channels_revoked: Schema.Int,
  tickets_revoked: Schema.Int
})

export const TransferRequest = RequestBody({ user_id: Uuid })

export const OrganizationDeletedDto = Schema.Struct({
  organization_id: Uuid,
  api_keys_revoked: Schema.Int,
  channels_revoked: Schema.Int,
  machines_stopping: Schema.Int,
  members_removed: Schema.Int,
  tickets_revoked: Schema.Int
})

export const InvitationDto = Schema.Struct({
  id: Uuid,
  organization_id: Uuid,
  invited_by: Uuid,
  email: Schema.String,
  role: Role,
  created_at: Timestamp,
  expires_at: Timestamp
})

export const InvitationList = Schema.Struct({ items: Schema.Array(InvitationDto) })

export const CreateInvitationRequest = RequestBody({ email: EmailAddress, role: Role })

export const InvitationState = Schema.Literal("open", "accepted", "revoked", "expired")

export const InvitationPreviewDto = Schema.Struct({
  organization_id: Uuid,
  organization_name: Schema.String,
  email: Schema.String,
  role: Role,
  expires_at: Timestamp,
  state: InvitationState
})

/** The link's token: what the e-mail carried (43 characters today; a little room, never a huge string). */
export const InvitationToken = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))

export const AcceptInvitationRequest = RequestBody({ token: InvitationToken })

export const InvitationAcceptedDto = Schema.Struct({ organization_id: Uuid, role: Role })

const OrganizationPath = Schema.Struct({ organization_id: Uuid })
const MemberPath = Schema.Struct({ organization_id: Uuid, user_id: Uuid })
const InvitationPath = Schema.Struct({ organization_id: Uuid, invitation_id: Uuid })

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
      policy: policy("R", "path", Roles.anyMember),
      errors: [ResourceNotFound]
    })
      .setPath(OrganizationPath)
      .addSuccess(MemberList)
  )
  .add(
    Endpoint.patch("update", "/v1/organizations/:organization_id/members/:user_id", {
      summary: "Change a member",
      description: "Sets a member's role and/or machine cap (`max_running_machines`: how many machines of theirs " +
        "may run at once). An admin may neither change an owner nor grant the owner role (`forbidden`); the only " +
        "owner cannot be demoted (`last_owner`). `usage_this_month` is zero here: read it from the list.",
      policy: policy("S", "path", Roles.administrators),
      errors: [LastOwner]
    })
      .setPath(MemberPath)
      .setPayload(UpdateMemberRequest)
      .addSuccess(MemberDto)
  )
  .add(
    Endpoint.del("remove", "/v1/organizations/:organization_id/members/:user_id", {
      summary: "Remove a member",
      description: "Owners and admins remove members; anyone may remove themselves; only an owner removes an " +
        "owner, and never the only one (`last_owner`). The member's API keys of this organization are revoked, " +
        "and their terminal tickets and channels end.",
      policy: policy("S", "path", Roles.anyMember),
      errors: [LastOwner]
    })
      .setPath(MemberPath)
      .addSuccess(MemberRemovedDto)
  )
  .add(
    Endpoint.post("transfer", "/v1/organizations/:organization_id/transfer", {
      summary: "Transfer ownership",
      description: "The member named becomes an owner and the caller, the owner, becomes an admin. 404 when " +
        "`user_id` is not a member.",
      policy: policy("S", "path", Roles.owner)
    })
      .setPath(OrganizationPath)
      .setPayload(TransferRequest)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    Endpoint.del("deleteOrganization", "/v1/organizations/:organization_id", {
      summary: "Delete an organization",
      description: "Needs a sign-in (session created or e-mail code verified) within the last 15 minutes " +
        "(`recent_auth_required`) and no renewing plan (`subscription_active`). At once the organization " +
        "answers 404 to everyone: members are removed, API keys and open invitations revoked, terminal tickets " +
        "and channels ended, and its machines stop with `stop_reason` `organization_deleted`.",
      policy: policy("S", "path", Roles.owner),
      errors: [RecentAuthRequired, SubscriptionActive]
    })
      .setPath(OrganizationPath)
      .addSuccess(OrganizationDeletedDto)
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
      description: "The organization svc's pages open a session in (shown by `GET /v1/me`; accepting an " +
        "invitation sets it too); one the caller belongs to, or null to clear it. Routes still need " +
        "`X-Organization-ID` with a session.",
      policy: policy("S"),
      errors: [ResourceNotFound]
    })
      .setPayload(RequestBody({ organization_id: Schema.NullOr(Uuid) }))
      .addSuccess(ActiveOrganizationDto)
  )
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Members and organizations: who belongs with which role, ownership, deletion, and the organization a " +
      "session's pages open in."
  )
{}

const administrators = policy("S", "path", Roles.administrators)

export class InvitationsApi extends HttpApiGroup.make("invitations")
  .add(
    Endpoint.get("list", "/v1/organizations/:organization_id/invitations", {
      summary: "List open invitations",
      description: "The organization's invitations still waiting (not accepted, revoked or expired), newest first.",
      policy: administrators
    })
      .setPath(OrganizationPath)
      .addSuccess(InvitationList)
  )
  .add(
    Endpoint.post("create", "/v1/organizations/:organization_id/invitations", {
      summary: "Invite someone",
      description: "E-mails the address a single-use link to `{ui_url}/invitations/accept?token=...`, valid 7 " +
        "days; an open invitation to the same address is revoked. Only an owner may invite an owner " +
        "(`forbidden`). At most 50 invitations per organization in 24 hours (429 `rate_limited` with " +
        "`Retry-After`). When the e-mail cannot be sent the invitation is revoked (502 `email_unavailable`); with " +
        "e-mail off the server answers 503 `invitations_unavailable`.",
      policy: administrators,
      errors: [AlreadyMember, InvitationNotSent, InvitationsUnavailable]
    })
      .setPath(OrganizationPath)
      .setPayload(CreateInvitationRequest)
      .addSuccess(InvitationDto, { status: 201 })
  )
  .add(
    Endpoint.del("revoke", "/v1/organizations/:organization_id/invitations/:invitation_id", {
      summary: "Revoke an invitation",
      description: "Its link stops working. Revoking a revoked or expired invitation changes nothing; an " +
        "accepted one answers 410 `invitation_closed`.",
      policy: administrators,
      errors: [InvitationClosed]
    })
      .setPath(InvitationPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    Endpoint.get("preview", "/v1/invitations", {
      summary: "Preview an invitation",
      description: "What the link's token invites to, and its `state` (`open`, `accepted`, `revoked`, " +
        "`expired`). 404 when no invitation has this token.",
      policy: policy("S"),
      errors: [ResourceNotFound]
    })
      .setUrlParams(QueryParams({ token: InvitationToken }))
      .addSuccess(InvitationPreviewDto)
  )
  .add(
    Endpoint.post("accept", "/v1/invitations/accept", {
      summary: "Accept an invitation",
      description: "The signed-in user joins the organization with the invited role, and it becomes the " +
        "session's active organization. The invited address must be the user's (`invitation_email_mismatch`); " +
        "an invitation accepted, revoked or expired answers 410 `invitation_closed`; a member already, 409 " +
        "`already_member`.",
      policy: policy("S"),
      errors: [ResourceNotFound, InvitationEmailMismatch, AlreadyMember, InvitationClosed]
    })
      .setPayload(AcceptInvitationRequest)
      .addSuccess(InvitationAcceptedDto)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Invitations: asking an address to join an organization with a role, by e-mail.")
{}
