/**
 * The organizations area in two layers, each providing its repositories privately:
 * - `OrganizationsLive`: who belongs where, and the kernel's OpenInvitations port. Identity stands on
 *   it (sessions, sign-up), so it needs only the kernel.
 * - `MembershipLive`: members, invitations, ownership and deletion. They end keys and sessions'
 *   choices (identity) and stop machines, so it stands on identity and the machines and snapshots
 *   areas; at its start it stops what a crash left running in deleted organizations, and its worker
 *   deletes their data once the retention ends.
 */
import { Clock, Effect, Layer } from "effect"
import { normalizeEmail } from "../identity/Accounts.js"
import { OpenInvitations } from "../kernel/Invitations.js"
import { OrganizationDeletion } from "./Deletion.js"
import { Invitations } from "./Invitations.js"
import { InvitationsRepo } from "./InvitationsRepo.js"
import { Members } from "./Members.js"
import { Organizations } from "./Organizations.js"
import { OrganizationsRepo } from "./Repo.js"
import * as Worker from "./Worker.js"

const OpenInvitationsLive = Layer.effect(
  OpenInvitations,
  Effect.map(InvitationsRepo, (repo) => ({
    heldBy: (email: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => repo.openFor(normalizeEmail(email), now))
  }))
)

export const OrganizationsLive = Layer.mergeAll(Organizations.layer, OpenInvitationsLive).pipe(
  Layer.provide(Layer.mergeAll(OrganizationsRepo.layer, InvitationsRepo.layer))
)

const stopLeftovers = Layer.scopedDiscard(
  Effect.flatMap(OrganizationDeletion, (deletion) =>
    Effect.forkScoped(
      deletion.stopLeftovers.pipe(
        Effect.catchAllCause((cause) => Effect.logError("stopping deleted organizations' machines", cause))
      )
    ))
)

export const MembershipLive = Layer.mergeAll(stopLeftovers, Worker.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(Members.layer, Invitations.layer, OrganizationDeletion.layer)),
  Layer.provide(Layer.mergeAll(OrganizationsRepo.layer, InvitationsRepo.layer))
)
