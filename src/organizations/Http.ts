import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { Billing } from "../billing/Billing.js"
import { Accounts } from "../identity/Accounts.js"
import { Sessions } from "../identity/Sessions.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentCredential, currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { iso } from "../kernel/http/Dto.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { OrganizationDeletion } from "./Deletion.js"
import { Invitations } from "./Invitations.js"
import type { InvitationRow } from "./InvitationsRepo.js"
import { type Actor, Members } from "./Members.js"
import { Organizations } from "./Organizations.js"
import type { MembershipRow } from "./Repo.js"

/** The member acting in the route's organization. */
const currentActor = Effect.gen(function*() {
  const organization = yield* currentOrganization
  const user = yield* currentUser
  return { organizationId: organization.id, userId: user.id, role: organization.role } satisfies Actor
})

/** The signed-in session's user and id (routes of access S). */
const currentInvitee = Effect.gen(function*() {
  const user = yield* currentUser
  const credential = yield* currentCredential
  return { userId: user.id, sessionId: credential.id }
})

interface Usage {
  readonly cost_micros: number
  readonly seconds: number
}

const noUsage: Usage = { cost_micros: 0, seconds: 0 }

/** `usage` is the member's this month (billing's meter). */
const memberDto = (
  member: MembershipRow & { readonly email: string; readonly running_machines: number },
  usage: Usage = noUsage
) => ({
  user_id: member.user_id,
  email: member.email,
  role: member.role,
  joined_at: iso(member.joined_at),
  max_running_machines: member.max_running_machines,
  running_machines: member.running_machines,
  usage_this_month: usage
})

const invitationDto = (row: InvitationRow) => ({
  id: row.id,
  organization_id: row.organization_id,
  invited_by: row.invited_by,
  email: row.email,
  role: row.role,
  created_at: iso(row.created_at),
  expires_at: iso(row.expires_at)
})

export const MembersHandlers = HttpApiBuilder.group(Api, "members", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const sessions = yield* Sessions
    const organizations = yield* Organizations
    const members = yield* Members
    const billing = yield* Billing
    const deletion = yield* OrganizationDeletion
    return handlers
      .handle("list", () =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          const usage = yield* billing.usageThisMonthByMember(organization.id)
          const list = yield* members.list(organization.id)
          return { items: list.map((member) => memberDto(member, usage.get(member.user_id))) }
        }))
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(currentActor, (actor) =>
          Effect.gen(function*() {
            const member = yield* members.change(actor, path.user_id.toLowerCase(), payload)
            const usage = yield* billing.usageThisMonthByMember(actor.organizationId)
            return memberDto(member, usage.get(member.user_id))
          })))
      .handle("remove", ({ path }) =>
        Effect.flatMap(currentActor, (actor) => members.remove(actor, path.user_id.toLowerCase())))
      .handle("transfer", ({ payload }) =>
        Effect.flatMap(currentActor, (actor) =>
          members.transfer(actor, payload.user_id.toLowerCase())))
      .handle("deleteOrganization", () =>
        Effect.gen(function*() {
          const credential = yield* currentCredential
          // Access S: the credential is a session.
          const signedInAt = credential.kind === "session" ? credential.authenticatedAt : 0
          return yield* deletion.delete(yield* currentActor, signedInAt)
        }))
      .handle("me", () =>
        Effect.gen(function*() {
          const user = Option.getOrThrow(yield* accounts.findUser((yield* currentUser).id))
          const credential = yield* currentCredential
          const memberships = yield* organizations.organizationsOf(user.id)
          return {
            user: { id: user.id, email: user.email, created_at: iso(user.created_at) },
            organizations: memberships.map((membership) => ({
              id: membership.organization_id,
              name: membership.name,
              role: membership.role,
              joined_at: iso(membership.joined_at)
            })),
            active_organization_id: credential.kind === "api_key"
              ? credential.organizationId
              : credential.activeOrganizationId,
            credential: credential.kind === "api_key"
              ? { kind: "api_key" as const, organization_id: credential.organizationId, preset: credential.preset }
              : { kind: "session" as const, organization_id: credential.activeOrganizationId, preset: null }
          }
        }))
      .handle("setActiveOrganization", ({ payload }) =>
        Effect.gen(function*() {
          const user = yield* currentUser
          const credential = yield* currentCredential
          const organizationId = payload.organization_id?.toLowerCase() ?? null
          yield* sessions.setActiveOrganization({ id: credential.id, userId: user.id }, organizationId)
          return { active_organization_id: organizationId }
        }))
  })).pipe(buildWithOnly(Authorization, Organizations, Billing, Accounts, Sessions, Members, OrganizationDeletion))

export const InvitationsHandlers = HttpApiBuilder.group(Api, "invitations", (handlers) =>
  Effect.gen(function*() {
    const invitations = yield* Invitations
    return handlers
      .handle("list", () =>
        Effect.flatMap(currentOrganization, (organization) =>
          Effect.map(invitations.listOpen(organization.id), (rows) => ({ items: rows.map(invitationDto) }))))
      .handle("create", ({ payload }) =>
        Effect.flatMap(currentActor, (actor) =>
          Effect.map(invitations.invite(actor, payload.email, payload.role), invitationDto)))
      .handle("revoke", ({ path }) =>
        Effect.flatMap(currentOrganization, (organization) =>
          invitations.revoke(organization.id, path.invitation_id.toLowerCase())))
      .handle("preview", ({ urlParams }) =>
        Effect.map(invitations.preview(urlParams.token), ({ invitation, organization, state }) => ({
          organization_id: organization.id,
          organization_name: organization.name,
          email: invitation.email,
          role: invitation.role,
          expires_at: iso(invitation.expires_at),
          state
        })))
      .handle("accept", ({ payload }) =>
        Effect.flatMap(currentInvitee, (invitee) =>
          invitations.accept(invitee, payload.token)))
  })).pipe(buildWithOnly(Authorization, Invitations))
