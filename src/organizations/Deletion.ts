/**
 * Deleting an organization (its owner, signed in within the last 15 minutes, with no renewing plan):
 * in one transaction it is marked deleted, its members removed, its keys and open invitations
 * revoked; then tickets and channels end and its machines stop (`organization_deleted`). From the
 * commit on it answers 404 to everyone. A stop cut short by a crash is done again at the next start
 * (`stopLeftovers`).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { ApiKeys } from "../identity/ApiKeys.js"
import { Sessions } from "../identity/Sessions.js"
import { AccessRevocations } from "../kernel/AccessRevocations.js"
import { AuditLog } from "../kernel/AuditLog.js"
import { Entitlements } from "../kernel/Entitlements.js"
import { Machines } from "../machines/Machines.js"
import { RecentAuthRequired, SubscriptionActive } from "./Errors.js"
import { InvitationsRepo } from "./InvitationsRepo.js"
import type { Actor } from "./Members.js"
import { OrganizationsRepo } from "./Repo.js"

export const recentSignInMillis = 15 * 60_000

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const repo = yield* OrganizationsRepo
  const invitations = yield* InvitationsRepo
  const apiKeys = yield* ApiKeys
  const sessions = yield* Sessions
  const revocations = yield* AccessRevocations
  const entitlements = yield* Entitlements
  const machines = yield* Machines
  const audit = yield* AuditLog

  return {
    /** `signedInAt`: when the caller's session was created or its e-mail code last verified. */
    delete: (actor: Actor, signedInAt: number) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (now - signedInAt > recentSignInMillis) {
          return yield* new RecentAuthRequired({
            detail: "Sign in again (within 15 minutes) to delete the organization"
          })
        }
        const organizationId = actor.organizationId
        if (yield* entitlements.subscriptionActive(organizationId)) {
          return yield* new SubscriptionActive({ detail: "Cancel the renewing plan before deleting the organization" })
        }
        const counts = yield* Effect.gen(function*() {
          const members = yield* repo.markDeleted(organizationId, now)
          const keys = yield* apiKeys.revokeHeldBy(organizationId, null)
          yield* invitations.revokeAllOpen(organizationId, now)
          yield* sessions.forgetOrganization(organizationId, null)
          yield* audit.record({
            actor: actor.userId,
            actorKind: "user",
            action: "organization.delete",
            organizationId,
            reason: null,
            detail: { members_removed: members, api_keys_revoked: keys }
          })
          return { members, keys }
        }).pipe(sql.withTransaction, Effect.orDie)
        const ended = yield* revocations.organization(organizationId)
        const stopping = yield* machines.stopAll(organizationId, "organization_deleted")
        return {
          organization_id: organizationId,
          api_keys_revoked: counts.keys,
          members_removed: counts.members,
          machines_stopping: stopping,
          ...ended
        }
      }),

    /** Stops what still runs in deleted organizations: a crash may have come between the commit and the stops. */
    stopLeftovers: Effect.flatMap(
      repo.deletedIds,
      (ids) => Effect.forEach(ids, (id) => machines.stopAll(id, "organization_deleted"), { discard: true })
    )
  }
})

export class OrganizationDeletion extends Context.Tag("svc/organizations/OrganizationDeletion")<
  OrganizationDeletion,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(OrganizationDeletion, make)
}
