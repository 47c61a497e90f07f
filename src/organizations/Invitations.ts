/**
 * Invitations: an owner or admin invites an address with a role; the e-mail carries a single-use
 * link to `{ui_url}/invitations/accept?token=` valid seven days (only the token's hash is kept). The
 * signed-in user whose address it is accepts it and becomes a member, with that organization active.
 * At most 50 invitations per organization in any 24 hours, counted from the table (a restart forgets
 * nothing).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { Accounts, normalizeEmail } from "../identity/Accounts.js"
import { Sessions } from "../identity/Sessions.js"
import { AuditLog } from "../kernel/AuditLog.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { randomToken, sha256 } from "../kernel/crypto/Tokens.js"
import type { Role } from "../kernel/domain/Access.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { Forbidden, RateLimited, ResourceNotFound } from "../kernel/http/Errors.js"
import { Mail } from "../kernel/mail/Mail.js"
import {
  AlreadyMember,
  InvitationClosed,
  InvitationEmailMismatch,
  InvitationNotSent,
  InvitationsUnavailable
} from "./Errors.js"
import { type InvitationRow, InvitationsRepo, stateOf } from "./InvitationsRepo.js"
import type { Actor } from "./Members.js"
import { OrganizationsRepo } from "./Repo.js"

export const invitationLifetimeMillis = 7 * 24 * 3600_000
export const dailyInvitations = { limit: 50, windowMillis: 24 * 3600_000 }

/** The signed-in user acting on an invitation, and the session to make its organization active in. */
export interface Invitee {
  readonly userId: string
  readonly sessionId: string
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const config = yield* AppConfig
  const mail = yield* Mail
  const repo = yield* InvitationsRepo
  const organizations = yield* OrganizationsRepo
  const accounts = yield* Accounts
  const sessions = yield* Sessions
  const audit = yield* AuditLog

  const notFound = new ResourceNotFound({ detail: "Invitation not found" })

  const message = (to: string, organizationName: string, role: Role, token: string) => {
    const link = `${config.uiUrl}/invitations/accept?token=${encodeURIComponent(token)}`
    return {
      to,
      subject: `You are invited to ${organizationName} on svc`,
      text: `You are invited to join ${organizationName} on svc as ${role}.\n\nOpen this link to accept:\n${link}\n\n` +
        `The link works once, within seven days. If you did not expect this, ignore this message.\n`,
      html: `<p>You are invited to join <strong>${escapeHtml(organizationName)}</strong> on svc as ${role}.</p>` +
        `<p><a href="${link}">Accept the invitation</a></p><p>The link works once, within seven days.</p>`
    }
  }

  /** 429 with the seconds until the oldest invitation of the last 24 hours leaves the window. */
  const underDailyLimit = (organizationId: string, now: number) =>
    Effect.flatMap(repo.createdSince(organizationId, now - dailyInvitations.windowMillis), (times) => {
      if (times.length < dailyInvitations.limit) return Effect.void
      const retryAfter = Math.max(1, Math.ceil((times[0]! + dailyInvitations.windowMillis - now) / 1000))
      return Effect.fail(
        new RateLimited({
          detail:
            `At most ${dailyInvitations.limit} invitations per organization in 24 hours; retry in ${retryAfter} s`,
          retry_after_seconds: retryAfter
        })
      )
    })

  /** The invitation holding this token and its organization; a deleted organization's are not found. */
  const findByToken = (token: string) =>
    Effect.gen(function*() {
      const invitation = yield* repo.findByTokenHash(sha256(token))
      if (Option.isNone(invitation)) return yield* notFound
      const organization = yield* organizations.findById(invitation.value.organization_id)
      if (Option.isNone(organization)) return yield* notFound
      return { invitation: invitation.value, organization: organization.value }
    })

  const isMember = (organizationId: string, email: string) =>
    Effect.gen(function*() {
      const user = yield* accounts.userIdOfAddress(email)
      if (Option.isNone(user)) return false
      return Option.isSome(yield* organizations.membership(organizationId, user.value))
    })

  return {
    /** The organization's open invitations, newest first. */
    listOpen: (organizationId: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => repo.listOpen(organizationId, now)),

    /** A new invitation, e-mailed; an open one to the same address is revoked by it. */
    invite: (actor: Actor, rawEmail: string, role: Role) =>
      Effect.gen(function*() {
        if (!mail.available) {
          return yield* new InvitationsUnavailable({ detail: "Invitations need e-mail, which is off (SVC_MAIL=off)" })
        }
        if (role === "owner" && actor.role !== "owner") {
          return yield* new Forbidden({ detail: "Only an owner may invite an owner" })
        }
        const email = normalizeEmail(rawEmail)
        if (yield* isMember(actor.organizationId, email)) {
          return yield* new AlreadyMember({ detail: `${email} is already a member` })
        }
        const organization = Option.getOrThrow(yield* organizations.findById(actor.organizationId))
        const now = yield* Clock.currentTimeMillis
        const token = randomToken()
        const row: InvitationRow = {
          id: uuidv7(),
          organization_id: actor.organizationId,
          invited_by: actor.userId,
          email,
          role,
          token_hash: sha256(token),
          created_at: now,
          expires_at: now + invitationLifetimeMillis,
          accepted_at: null,
          accepted_by: null,
          revoked_at: null
        }
        yield* Effect.gen(function*() {
          yield* underDailyLimit(actor.organizationId, now)
          yield* repo.revokeOpenTo(actor.organizationId, email, now)
          yield* repo.insert(row)
          yield* audit.record({
            actor: actor.userId,
            actorKind: "user",
            action: "invitation.create",
            organizationId: actor.organizationId,
            reason: null,
            detail: { invitation_id: row.id, email, role }
          })
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
        yield* mail.send(message(email, organization.name, role, token)).pipe(
          Effect.tapError((error) => Effect.logWarning("invitation email not sent", error.cause)),
          // A link nobody received must not stay usable.
          Effect.tapError(() => repo.revoke(row.id, now)),
          Effect.mapError(() =>
            new InvitationNotSent({ detail: "The invitation e-mail could not be sent; it was revoked" })
          )
        )
        return row
      }),

    /** Revokes an invitation; an accepted one is closed (410), a revoked or expired one stays as it is. */
    revoke: (organizationId: string, id: string) =>
      Effect.gen(function*() {
        const found = yield* repo.findById(organizationId, id)
        if (Option.isNone(found)) return yield* notFound
        if (found.value.accepted_at !== null) {
          return yield* new InvitationClosed({ detail: "The invitation was accepted already" })
        }
        yield* repo.revoke(id, yield* Clock.currentTimeMillis)
      }),

    /** What a token invites to, in any state (the accept page shows it before accepting). */
    preview: (token: string) =>
      Effect.gen(function*() {
        const { invitation, organization } = yield* findByToken(token)
        return { invitation, organization, state: stateOf(invitation, yield* Clock.currentTimeMillis) }
      }),

    /** The signed-in user joins with the invited role; the organization becomes the session's active one. */
    accept: (invitee: Invitee, token: string) =>
      Effect.gen(function*() {
        const { invitation } = yield* findByToken(token)
        const now = yield* Clock.currentTimeMillis
        const state = stateOf(invitation, now)
        if (state !== "open") return yield* new InvitationClosed({ detail: `The invitation is ${state}` })
        // The invited address must be one the user signs in with: their own or one linked to them.
        const holder = yield* accounts.userIdOfAddress(invitation.email)
        if (Option.getOrNull(holder) !== invitee.userId) {
          return yield* new InvitationEmailMismatch({
            detail: "The invitation is for another address than the signed-in user's"
          })
        }
        const organizationId = invitation.organization_id
        // The invitation is taken first, then membership is asked, in one transaction: a second
        // accept of one link waits for the first's (its row is locked by the update) and finds it
        // closed, whenever it runs; a member's own accept is rolled back.
        yield* Effect.gen(function*() {
          if (!(yield* repo.accept(invitation.id, invitee.userId, now))) {
            return yield* new InvitationClosed({ detail: "The invitation was just used or closed" })
          }
          if (Option.isSome(yield* organizations.membership(organizationId, invitee.userId))) {
            return yield* new AlreadyMember({ detail: "You are already a member of this organization" })
          }
          yield* organizations.addMember(organizationId, invitee.userId, invitation.role, now)
          yield* audit.record({
            actor: invitee.userId,
            actorKind: "user",
            action: "invitation.accept",
            organizationId,
            reason: null,
            detail: { invitation_id: invitation.id, role: invitation.role }
          })
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
        yield* sessions.setActiveOrganization({ id: invitee.sessionId, userId: invitee.userId }, organizationId)
        return { organization_id: organizationId, role: invitation.role }
      })
  }
})

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

export class Invitations extends Context.Tag("svc/organizations/Invitations")<
  Invitations,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(Invitations, make)
}
