/**
 * Invitations and deletion at the service: the OpenInvitations port sign-up asks, mail that is off
 * or fails, the audit rows written with each change, and a renewing plan refusing deletion.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, TestClock } from "effect"
import { Sessions } from "../../src/identity/Sessions.js"
import { AuditLog } from "../../src/kernel/AuditLog.js"
import { AppConfig } from "../../src/kernel/config/AppConfig.js"
import { Entitlements } from "../../src/kernel/Entitlements.js"
import { OpenInvitations } from "../../src/kernel/Invitations.js"
import { readOutbox } from "../../src/kernel/mail/Outbox.js"
import { OrganizationDeletion } from "../../src/organizations/Deletion.js"
import { Invitations } from "../../src/organizations/Invitations.js"
import { InvitationsRepo } from "../../src/organizations/InvitationsRepo.js"
import { Members } from "../../src/organizations/Members.js"
import { OrganizationsRepo } from "../../src/organizations/Repo.js"
import { failureTag, owner, services } from "../support/Services.js"

const start = Date.parse("2026-11-22T12:00:00Z")

/** The owner of a new organization as the actor of member changes. */
const ownerActor = (context: Context.Context<any>, email: string) =>
  Effect.map(owner(context, email), (requester) => ({
    organizationId: requester.organizationId,
    userId: requester.userId,
    role: "owner" as const
  }))

describe("invitations at the service", () => {
  it.scoped(
    "an address holds an open invitation until it is accepted, revoked or expired",
    () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(start)
        const context = yield* services()
        const invitations = Context.get(context, Invitations)
        const held = (email: string) => Context.get(context, OpenInvitations).heldBy(email)
        const actor = yield* ownerActor(context, "owner@example.com")
        assert.isFalse(yield* held("ada@example.com"))
        const first = yield* invitations.invite(actor, "ada@example.com", "member")
        assert.isTrue(yield* held(" ADA@example.com "))
        yield* invitations.revoke(actor.organizationId, first.id)
        assert.isFalse(yield* held("ada@example.com"))
        yield* invitations.invite(actor, "ada@example.com", "member")
        assert.isTrue(yield* held("ada@example.com"))
        yield* TestClock.adjust("7 days")
        assert.isFalse(yield* held("ada@example.com"))
        // Each invitation left an audit row in its organization.
        const rows = yield* Context.get(context, AuditLog).list({ organizationId: actor.organizationId, limit: 10 })
        assert.deepStrictEqual(rows.map((row) => row.action), ["invitation.create", "invitation.create"])
      }),
    180_000
  )

  it.scoped("with mail off invitations are unavailable (503) and nothing is recorded", () =>
    Effect.gen(function*() {
      const context = yield* services({ mail: { kind: "off" } })
      const actor = yield* ownerActor(context, "owner@example.com")
      const invitations = Context.get(context, Invitations)
      assert.strictEqual(
        yield* failureTag(invitations.invite(actor, "ada@example.com", "member")),
        "invitations_unavailable"
      )
      assert.deepStrictEqual(yield* invitations.listOpen(actor.organizationId), [])
    }))

  it.scoped("an e-mail that cannot be sent answers 502 email_unavailable and revokes the invitation", () =>
    Effect.gen(function*() {
      // Nothing listens on port 9 of the loopback: the SMTP connection is refused.
      const context = yield* services({ mail: { kind: "smtp", url: Redacted.make("smtp://127.0.0.1:9") } })
      const actor = yield* ownerActor(context, "owner@example.com")
      const invitations = Context.get(context, Invitations)
      const failed = yield* Effect.flip(invitations.invite(actor, "ada@example.com", "member"))
      assert.strictEqual(failed._tag, "email_unavailable")
      assert.deepStrictEqual(yield* invitations.listOpen(actor.organizationId), [])
      assert.isFalse(yield* Context.get(context, OpenInvitations).heldBy("ada@example.com"))
    }))

  it.scoped("two accepts of one link: exactly one joins", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const actor = yield* ownerActor(context, "owner@example.com")
      const invitee = yield* owner(context, "ada@example.com")
      const sessions = Context.get(context, Sessions)
      const invitations = Context.get(context, Invitations)
      yield* invitations.invite(actor, "ada@example.com", "admin")
      // The token only reached the mail: take it from the outbox.
      const config = Context.get(context, AppConfig)
      const mailed = yield* readOutbox((config.mail as { readonly dir: string }).dir)
      const token = /token=([A-Za-z0-9_-]+)/.exec(mailed.at(-1)!.text)![1]!
      const session = yield* sessions.create(invitee.userId, null)
      const accept = invitations.accept({ userId: invitee.userId, sessionId: session.row.id }, token)
      const outcomes = yield* Effect.all([failureTag(accept), failureTag(accept)], { concurrency: 2 })
      assert.deepStrictEqual([...outcomes].sort(), ["invitation_closed", "succeeded"])
      assert.isFalse(yield* Context.get(context, OpenInvitations).heldBy("ada@example.com"))
    }))
})

describe("deletion at the service", () => {
  it.scoped("a renewing plan refuses deletion (409 subscription_active) and changes nothing", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const context = yield* services()
      const actor = yield* ownerActor(context, "owner@example.com")
      const renewing = Layer.succeed(Entitlements, {
        ...Context.get(context, Entitlements),
        subscriptionActive: (id) => Effect.succeed(id === actor.organizationId)
      })
      const deletion = Context.get(
        yield* Layer.build(
          OrganizationDeletion.layer.pipe(
            Layer.provide(Layer.mergeAll(OrganizationsRepo.layer, InvitationsRepo.layer)),
            Layer.provide(renewing),
            Layer.provide(Layer.succeedContext(context))
          )
        ),
        OrganizationDeletion
      )
      assert.strictEqual(yield* failureTag(deletion.delete(actor, start)), "subscription_active")
      const sql = Context.get(context, SqlClient.SqlClient)
      const rows = yield* sql<{ deleted_at: number | null }>`SELECT deleted_at FROM organizations
        WHERE id = ${actor.organizationId}`
      assert.strictEqual(rows[0]!.deleted_at, null)
      // Another organization of the same server has no plan: its owner deletes it.
      const other = yield* ownerActor(context, "other@example.com")
      const deleted = yield* deletion.delete(other, start)
      assert.strictEqual(deleted.members_removed, 1)
    }))

  it.scoped("members' changes are written with their audit rows", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const actor = yield* ownerActor(context, "owner@example.com")
      const members = Context.get(context, Members)
      assert.strictEqual(yield* failureTag(members.remove(actor, actor.userId)), "last_owner")
      yield* members.change(actor, actor.userId, { max_running_machines: 5 })
      const rows = yield* Context.get(context, AuditLog).list({ organizationId: actor.organizationId, limit: 10 })
      assert.deepStrictEqual(rows.map((row) => [row.action, JSON.parse(row.detail)]), [
        ["member.change", { user_id: actor.userId, max_running_machines: 5 }]
      ])
    }))
})
