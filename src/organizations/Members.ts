/**
 * What owners and admins do to who belongs: change a member's role or machine cap (a demotion below
 * the machine-changing roles ends their terminal tickets and channels), remove a member (ending the
 * keys, tickets and channels they hold there), hand ownership over. No change leaves an
 * organization without an owner (`last_owner`). Each change and its audit row share a transaction.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { Accounts } from "../identity/Accounts.js"
import { ApiKeys } from "../identity/ApiKeys.js"
import { Sessions } from "../identity/Sessions.js"
import { AccessRevocations } from "../kernel/AccessRevocations.js"
import { AuditLog } from "../kernel/AuditLog.js"
import { type Role, roleAllowed, Roles } from "../kernel/domain/Access.js"
import { Forbidden, InvalidRequest, ResourceNotFound } from "../kernel/http/Errors.js"
import { LastOwner } from "./Errors.js"
import { Organizations } from "./Organizations.js"
import { OrganizationsRepo } from "./Repo.js"

/** The member acting, in the organization of the route. */
export interface Actor {
  readonly organizationId: string
  readonly userId: string
  readonly role: Role
}

export interface MemberChange {
  readonly role?: Role | null | undefined
  /** null removes the cap; undefined leaves it. */
  readonly max_running_machines?: number | null | undefined
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const repo = yield* OrganizationsRepo
  const organizations = yield* Organizations
  const accounts = yield* Accounts
  const apiKeys = yield* ApiKeys
  const sessions = yield* Sessions
  const revocations = yield* AccessRevocations
  const audit = yield* AuditLog

  const memberOf = (organizationId: string, userId: string) =>
    Effect.flatMap(
      repo.membership(organizationId, userId),
      Option.match({
        onNone: () => Effect.fail(new ResourceNotFound({ detail: "Member not found" })),
        onSome: Effect.succeed
      })
    )

  /** Refuses taking the owner role from the only owner; runs inside the change's transaction. */
  const keepAnOwner = (organizationId: string, leaving: Role) =>
    leaving !== "owner"
      ? Effect.void
      : Effect.flatMap(repo.ownerCount(organizationId), (owners) =>
        owners > 1
          ? Effect.void
          : Effect.fail(new LastOwner({ detail: "The organization's only owner cannot leave or be demoted" })))

  const record = (actor: Actor, action: string, detail: Record<string, unknown>) =>
    audit.record({
      actor: actor.userId,
      actorKind: "user",
      action,
      organizationId: actor.organizationId,
      reason: null,
      detail
    })

  /** The members with their addresses (identity's) and running machines, by joining time then address. */
  const list = (organizationId: string) =>
    Effect.gen(function*() {
      const members = yield* organizations.members(organizationId)
      const addresses = yield* accounts.addressesOf(members.map((member) => member.user_id))
      return members
        .map((member) => ({ ...member, email: addresses.get(member.user_id) ?? "" }))
        .sort((a, b) => a.joined_at - b.joined_at || (a.email < b.email ? -1 : a.email > b.email ? 1 : 0))
    })

  /** The member as listed (address, running machines). */
  const listed = (organizationId: string, userId: string) =>
    Effect.map(list(organizationId), (members) => members.find((member) => member.user_id === userId)!)

  return {
    list,
    /** Role and cap of a member; an admin may neither change an owner nor make one. */
    change: (actor: Actor, userId: string, change: MemberChange) =>
      Effect.gen(function*() {
        const target = yield* memberOf(actor.organizationId, userId)
        const role = change.role ?? undefined
        if (actor.role !== "owner" && (target.role === "owner" || role === "owner")) {
          return yield* new Forbidden({ detail: "Only an owner may change an owner or grant the owner role" })
        }
        yield* Effect.gen(function*() {
          if (role !== undefined && role !== target.role) yield* keepAnOwner(actor.organizationId, target.role)
          yield* repo.updateMember(actor.organizationId, userId, {
            role,
            max_running_machines: change.max_running_machines
          })
          yield* record(actor, "member.change", {
            user_id: userId,
            ...(role !== undefined ? { role, previous_role: target.role } : {}),
            ...(change.max_running_machines !== undefined
              ? { max_running_machines: change.max_running_machines }
              : {})
          })
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
        // Roles are checked at each request, so a demoted member's keys and sessions shrink at once; a
        // terminal opened earlier outlives requests, so one who may no longer open terminals loses them.
        if (
          role !== undefined && roleAllowed(target.role, Roles.machineChangers) &&
          !roleAllowed(role, Roles.machineChangers)
        ) yield* revocations.member(actor.organizationId, userId)
        return yield* listed(actor.organizationId, userId)
      }),

    /**
     * Removes a member: anyone may remove themselves, owners and admins others, only owners an owner.
     * Their keys of this organization are revoked with the removal; tickets and channels right after.
     */
    remove: (actor: Actor, userId: string) =>
      Effect.gen(function*() {
        const target = yield* memberOf(actor.organizationId, userId)
        if (userId !== actor.userId) {
          if (!roleAllowed(actor.role, Roles.administrators)) {
            return yield* new Forbidden({ detail: "Only owners and admins remove other members" })
          }
          if (actor.role !== "owner" && target.role === "owner") {
            return yield* new Forbidden({ detail: "Only an owner may remove an owner" })
          }
        }
        const keys = yield* Effect.gen(function*() {
          yield* keepAnOwner(actor.organizationId, target.role)
          const revoked = yield* apiKeys.revokeHeldBy(actor.organizationId, userId)
          yield* repo.removeMember(actor.organizationId, userId)
          yield* sessions.forgetOrganization(actor.organizationId, userId)
          yield* record(actor, "member.remove", { user_id: userId, role: target.role, api_keys_revoked: revoked })
          return revoked
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
        const ended = yield* revocations.member(actor.organizationId, userId)
        return { user_id: userId, api_keys_revoked: keys, ...ended }
      }),

    /** The owner hands ownership to another member and becomes an admin. */
    transfer: (actor: Actor, userId: string) =>
      Effect.gen(function*() {
        if (userId === actor.userId) {
          return yield* new InvalidRequest({
            detail: "Ownership goes to another member",
            field_errors: [{ field: "user_id", message: "names the caller, who is already the owner" }]
          })
        }
        const target = yield* memberOf(actor.organizationId, userId)
        yield* Effect.gen(function*() {
          yield* repo.updateMember(actor.organizationId, userId, { role: "owner" })
          yield* repo.updateMember(actor.organizationId, actor.userId, { role: "admin" })
          yield* record(actor, "organization.transfer", { user_id: userId, previous_role: target.role })
        }).pipe(sql.withTransaction, Effect.orDie)
      })
  }
})

export class Members extends Context.Tag("svc/organizations/Members")<Members, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Members, make)
}
