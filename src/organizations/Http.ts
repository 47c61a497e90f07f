import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { Accounts } from "../identity/Accounts.js"
import { Sessions } from "../identity/Sessions.js"
import { currentCredential, currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { iso } from "../kernel/http/Dto.js"
import { Organizations } from "./Organizations.js"

export const MembersHandlers = HttpApiBuilder.group(Api, "members", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const sessions = yield* Sessions
    const organizations = yield* Organizations
    return handlers
      .handle("list", () =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          const members = yield* organizations.members(organization.id)
          return {
            items: members.map((member) => ({
              user_id: member.user_id,
              email: member.email,
              role: member.role,
              joined_at: iso(member.joined_at),
              max_running_machines: member.max_running_machines,
              running_machines: member.running_machines,
              usage_this_month: { cost_micros: 0, seconds: 0 }
            }))
          }
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
  }))
