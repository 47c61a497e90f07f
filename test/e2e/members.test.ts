/**
 * Members, invitations, ownership and deletion through the real server: invitation links by e-mail,
 * single use, seven days on the TestClock, the daily limit with Retry-After, roles and `last_owner`,
 * removal ending keys, transfer, and deletion with a recent sign-in.
 */
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, TestClock } from "effect"
import { client, request } from "../support/Http.js"
import { eventually, runningMachine } from "../support/Machines.js"
import { invite, joined } from "../support/Members.js"
import { latestMailTo, signIn } from "../support/SignIn.js"
import { startServer, type TestServer } from "../support/TestServer.js"

const start = Date.parse("2026-11-22T12:00:00Z")

/** An owner signed in, their organization and key. */
const ownerOf = (server: TestServer) =>
  Effect.gen(function*() {
    const owner = yield* server.bootstrap("owner@example.com")
    const browser = yield* signIn(server, "owner@example.com")
    const org = owner.organization_id
    // A session names the organization it acts in, path-scoped routes included.
    const as = (b: typeof browser) => (method: string, path: string, json?: unknown) =>
      b.http(method, path, {
        headers: { ...b.withCsrf, "x-organization-id": org },
        ...(json === undefined ? {} : { json })
      })
    return { owner, browser, org, api: as(browser), as }
  })

describe("invitations", () => {
  it.scoped("an invitation is mailed, previewed, accepted once by its address, and makes the organization active", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { api, browser, org } = yield* ownerOf(server)
      const { invitation, token } = yield* invite(server, browser, org, "Ada@Example.com", "operator")
      assert.deepInclude(invitation, { organization_id: org, email: "ada@example.com", role: "operator" })
      assert.strictEqual(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at), 7 * 86400_000)
      const mail = (yield* server.outbox).at(-1)!
      assert.include(mail.text, `${server.config.uiUrl}/invitations/accept?token=${token}`)
      // Only a hash of the token is kept.
      const listed = yield* api("GET", `/v1/organizations/${org}/invitations`)
      assert.deepStrictEqual(listed.body.items.map((item: any) => item.id), [invitation.id])
      assert.notInclude(JSON.stringify(listed.body), token)

      const ada = yield* signIn(server, "ada@example.com")
      const preview = yield* ada.http("GET", `/v1/invitations?token=${token}`)
      assert.strictEqual(preview.status, 200, preview.text)
      assert.deepInclude(preview.body, {
        organization_id: org,
        email: "ada@example.com",
        role: "operator",
        state: "open"
      })
      assert.strictEqual(preview.body.organization_name, "owner's organization")
      const unknown = yield* ada.http("GET", "/v1/invitations?token=nope")
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(unknown.body.code, "resource_not_found")

      // Another signed-in user cannot use it.
      const eve = yield* signIn(server, "eve@example.com")
      const mismatch = yield* eve.http("POST", "/v1/invitations/accept", { headers: eve.withCsrf, json: { token } })
      assert.strictEqual(mismatch.status, 403)
      assert.strictEqual(mismatch.body.code, "invitation_email_mismatch")
      // CSRF, and a key, are refused.
      assert.strictEqual(
        (yield* ada.http("POST", "/v1/invitations/accept", { json: { token } })).body.code,
        "csrf_invalid"
      )
      const byKey = yield* request(server.url, "POST", "/v1/invitations/accept", {
        headers: { authorization: `Bearer ${(yield* server.bootstrap("ada@example.com")).api_key}` },
        json: { token }
      })
      assert.strictEqual(byKey.body.code, "session_required")

      const accepted = yield* ada.http("POST", "/v1/invitations/accept", { headers: ada.withCsrf, json: { token } })
      assert.strictEqual(accepted.status, 200, accepted.text)
      assert.deepStrictEqual(accepted.body, { organization_id: org, role: "operator" })
      const me = (yield* ada.http("GET", "/v1/me")).body
      assert.strictEqual(me.active_organization_id, org)
      assert.include(me.organizations.map((o: any) => `${o.id}:${o.role}`), `${org}:operator`)
      const again = yield* ada.http("POST", "/v1/invitations/accept", { headers: ada.withCsrf, json: { token } })
      assert.strictEqual(again.status, 410)
      assert.strictEqual(again.body.code, "invitation_closed")
      assert.strictEqual((yield* ada.http("GET", `/v1/invitations?token=${token}`)).body.state, "accepted")
      assert.deepStrictEqual((yield* api("GET", `/v1/organizations/${org}/invitations`)).body.items, [])
      // Revoking an accepted invitation is closed; inviting a member is refused.
      const revoke = yield* api("DELETE", `/v1/organizations/${org}/invitations/${invitation.id}`)
      assert.strictEqual(revoke.status, 410)
      assert.strictEqual(revoke.body.code, "invitation_closed")
      const member = yield* api("POST", `/v1/organizations/${org}/invitations`, {
        email: "ADA@example.com",
        role: "member"
      })
      assert.strictEqual(member.status, 409)
      assert.strictEqual(member.body.code, "already_member")
      const members = (yield* api("GET", `/v1/organizations/${org}/members`)).body.items
      // Joined at the same instant of the test's clock: by address.
      assert.deepStrictEqual(members.map((m: any) => [m.email, m.role]), [
        ["ada@example.com", "operator"],
        ["owner@example.com", "owner"]
      ])
      assert.deepStrictEqual(members[0].usage_this_month, { cost_micros: 0, seconds: 0 })
    }))

  it.scoped("an address linked to an account accepts for it, and counts as that member's", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { api, browser, org } = yield* ownerOf(server)
      const ada = yield* signIn(server, "ada@example.com")
      yield* ada.http("POST", "/v1/auth/link/email", { json: { email: "ada.work@example.com" }, headers: ada.withCsrf })
      const code = /link this address is (\d{6})/.exec((yield* latestMailTo(server, "ada.work@example.com")).text)![1]
      const linked = yield* ada.http("POST", "/v1/auth/email/verify", {
        json: { email: "ada.work@example.com", code },
        headers: ada.withCsrf
      })
      assert.strictEqual(linked.status, 200, linked.text)
      const { token } = yield* invite(server, browser, org, "ada.work@example.com", "member")
      const accepted = yield* ada.http("POST", "/v1/invitations/accept", { headers: ada.withCsrf, json: { token } })
      assert.strictEqual(accepted.status, 200, accepted.text)
      const again = yield* api("POST", `/v1/organizations/${org}/invitations`, {
        email: "ada@example.com",
        role: "member"
      })
      assert.strictEqual(again.body.code, "already_member")
    }))

  it.scoped("a new invitation revokes the open one to the same address; revoking is idempotent", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { api, browser, org } = yield* ownerOf(server)
      const first = yield* invite(server, browser, org, "bob@example.com", "member")
      const second = yield* invite(server, browser, org, "bob@example.com", "admin")
      const bob = yield* signIn(server, "bob@example.com")
      const old = yield* bob.http("POST", "/v1/invitations/accept", {
        headers: bob.withCsrf,
        json: { token: first.token }
      })
      assert.strictEqual(old.status, 410)
      assert.strictEqual((yield* bob.http("GET", `/v1/invitations?token=${first.token}`)).body.state, "revoked")
      const path = `/v1/organizations/${org}/invitations/${second.invitation.id}`
      assert.strictEqual((yield* api("DELETE", path)).status, 204)
      assert.strictEqual((yield* api("DELETE", path)).status, 204)
      const revoked = yield* bob.http("POST", "/v1/invitations/accept", {
        headers: bob.withCsrf,
        json: { token: second.token }
      })
      assert.strictEqual(revoked.body.code, "invitation_closed")
      const unknown = yield* api("DELETE", `/v1/organizations/${org}/invitations/${crypto.randomUUID()}`)
      assert.strictEqual(unknown.status, 404)
    }))

  it.scoped("a link expires after seven days on the clock", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const server = yield* startServer()
      const { browser, org } = yield* ownerOf(server)
      const { token } = yield* invite(server, browser, org, "late@example.com", "member")
      const late = yield* signIn(server, "late@example.com")
      yield* TestClock.adjust("7 days")
      assert.strictEqual((yield* late.http("GET", `/v1/invitations?token=${token}`)).body.state, "expired")
      const reply = yield* late.http("POST", "/v1/invitations/accept", { headers: late.withCsrf, json: { token } })
      assert.strictEqual(reply.status, 410)
      assert.strictEqual(reply.body.code, "invitation_closed")
    }), 180_000)

  it.scoped("at most 50 invitations per organization in 24 hours, with Retry-After", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const server = yield* startServer()
      const { api, org } = yield* ownerOf(server)
      const send = (i: number) =>
        api("POST", `/v1/organizations/${org}/invitations`, { email: `user${i}@example.com`, role: "member" })
      assert.strictEqual((yield* send(0)).status, 201)
      yield* TestClock.adjust("1 hours")
      for (let i = 1; i < 50; i++) assert.strictEqual((yield* send(i)).status, 201)
      const refused = yield* send(50)
      assert.strictEqual(refused.status, 429)
      assert.strictEqual(refused.body.code, "rate_limited")
      assert.strictEqual(refused.headers.get("retry-after"), String(23 * 3600))
      // The first one leaves the window after 24 hours: one more fits.
      yield* TestClock.adjust("23 hours")
      assert.strictEqual((yield* send(50)).status, 201)
      assert.strictEqual((yield* send(51)).status, 429)
    }))

  it.scoped("only an owner invites an owner; bodies are checked; a key is refused", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { browser, org, as } = yield* ownerOf(server)
      const admin = as((yield* joined(server, browser, org, "admin@example.com", "admin")).browser)
      const refused = yield* admin("POST", `/v1/organizations/${org}/invitations`, {
        email: "x@example.com",
        role: "owner"
      })
      assert.strictEqual(refused.status, 403)
      assert.strictEqual(refused.body.code, "forbidden")
      assert.strictEqual(
        (yield* admin("POST", `/v1/organizations/${org}/invitations`, { email: "x@example.com", role: "admin" }))
          .status,
        201
      )
      const member = as((yield* joined(server, browser, org, "member@example.com", "member")).browser)
      assert.strictEqual(
        (yield* member("POST", `/v1/organizations/${org}/invitations`, { email: "y@example.com", role: "member" })).body
          .code,
        "forbidden"
      )
      assert.strictEqual((yield* member("GET", `/v1/organizations/${org}/invitations`)).body.code, "forbidden")
      for (const body of [{ email: "nope", role: "member" }, { email: "a@b.co", role: "king" }, { email: "a@b.co" }]) {
        const reply = yield* admin("POST", `/v1/organizations/${org}/invitations`, body)
        assert.strictEqual(reply.status, 422, JSON.stringify(body))
      }

      const owner = yield* server.bootstrap("owner@example.com")
      const key = client(server.url, { key: owner.api_key })
      assert.strictEqual(
        (yield* key("POST", `/v1/organizations/${owner.organization_id}/invitations`, {
          json: { email: "a@example.com", role: "member" }
        })).body.code,
        "session_required"
      )
    }))
})

describe("members and ownership", () => {
  it.scoped("roles: admins change non-owners, never owners; the only owner stays; caps are checked", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { api, browser, org, owner, as } = yield* ownerOf(server)
      const adminJoin = yield* joined(server, browser, org, "admin@example.com", "admin")
      const memberJoin = yield* joined(server, browser, org, "member@example.com", "member")
      const admin = as(adminJoin.browser)
      const memberPath = `/v1/organizations/${org}/members/${memberJoin.userId}`
      const changed = yield* admin("PATCH", memberPath, { role: "billing", max_running_machines: 3 })
      assert.strictEqual(changed.status, 200, changed.text)
      assert.deepInclude(changed.body, { role: "billing", max_running_machines: 3, email: "member@example.com" })
      assert.deepStrictEqual(changed.body.usage_this_month, { cost_micros: 0, seconds: 0 })
      const kept = yield* admin("PATCH", memberPath, {})
      assert.deepInclude(kept.body, { role: "billing", max_running_machines: 3 })
      assert.strictEqual(
        (yield* admin("PATCH", memberPath, { max_running_machines: null })).body.max_running_machines,
        null
      )
      for (
        const body of [{ max_running_machines: 10001 }, { max_running_machines: -1 }, { role: "king" }, {
          rol: "admin"
        }]
      ) {
        assert.strictEqual((yield* admin("PATCH", memberPath, body)).status, 422, JSON.stringify(body))
      }
      const grant = yield* admin("PATCH", memberPath, { role: "owner" })
      assert.strictEqual(grant.body.code, "forbidden")
      const ownerPath = `/v1/organizations/${org}/members/${owner.user_id}`
      assert.strictEqual((yield* admin("PATCH", ownerPath, { role: "member" })).body.code, "forbidden")
      assert.strictEqual((yield* admin("DELETE", ownerPath)).body.code, "forbidden")
      const member = as(memberJoin.browser)
      assert.strictEqual((yield* member("PATCH", memberPath, { role: "admin" })).body.code, "forbidden")
      // The only owner can neither step down nor leave.
      const demote = yield* api("PATCH", ownerPath, { role: "admin" })
      assert.strictEqual(demote.status, 409)
      assert.strictEqual(demote.body.code, "last_owner")
      assert.strictEqual((yield* api("DELETE", ownerPath)).body.code, "last_owner")
      // With a second owner, the first may step down.
      assert.strictEqual(
        (yield* api("PATCH", `/v1/organizations/${org}/members/${adminJoin.userId}`, { role: "owner" })).status,
        200
      )
      assert.strictEqual((yield* api("PATCH", ownerPath, { role: "admin" })).body.role, "admin")
      assert.strictEqual(
        (yield* api("PATCH", `/v1/organizations/${org}/members/${crypto.randomUUID()}`, {})).status,
        404
      )
      const byKey = yield* client(server.url, { key: owner.api_key })("PATCH", memberPath, { json: { role: "admin" } })
      assert.strictEqual(byKey.body.code, "session_required")
    }))

  it.scoped("removal: members leave themselves, admins remove others, and the member's keys end at once", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { api, browser, org, as } = yield* ownerOf(server)
      const leaver = yield* joined(server, browser, org, "leaver@example.com", "member")
      const other = yield* joined(server, browser, org, "other@example.com", "operator")
      const leaverApi = as(leaver.browser)
      const key = yield* leaver.browser.http("POST", "/v1/api-keys", {
        headers: { ...leaver.browser.withCsrf, "x-organization-id": org },
        json: { name: "mine", preset: "read_only" }
      })
      assert.strictEqual(key.status, 201, key.text)
      const leaverKey = client(server.url, { key: key.body.secret })
      assert.strictEqual((yield* leaverKey("GET", "/v1/me")).status, 200)
      // A plain member may not remove another.
      const refused = yield* leaverApi("DELETE", `/v1/organizations/${org}/members/${other.userId}`)
      assert.strictEqual(refused.body.code, "forbidden")
      const left = yield* leaverApi("DELETE", `/v1/organizations/${org}/members/${leaver.userId}`)
      assert.strictEqual(left.status, 200, left.text)
      assert.deepStrictEqual(left.body, {
        user_id: leaver.userId,
        api_keys_revoked: 1,
        channels_revoked: 0,
        tickets_revoked: 0
      })
      assert.strictEqual((yield* leaverKey("GET", "/v1/me")).body.code, "invalid_api_key")
      assert.strictEqual((yield* leaverApi("GET", `/v1/organizations/${org}/members`)).status, 404)
      assert.strictEqual((yield* leaver.browser.http("GET", "/v1/me")).body.active_organization_id, null)
      const removed = yield* api("DELETE", `/v1/organizations/${org}/members/${other.userId}`)
      assert.strictEqual(removed.status, 200)
      assert.strictEqual(removed.body.api_keys_revoked, 0)
      assert.strictEqual((yield* api("DELETE", `/v1/organizations/${org}/members/${other.userId}`)).status, 404)
      assert.deepStrictEqual(
        (yield* api("GET", `/v1/organizations/${org}/members`)).body.items.map((m: any) => m.email),
        ["owner@example.com"]
      )
    }))

  it.scoped("transfer: the member named becomes owner and the caller an admin", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { api, browser, org, owner, as } = yield* ownerOf(server)
      const heir = yield* joined(server, browser, org, "heir@example.com", "member")
      const stranger = yield* server.bootstrap("stranger@example.com")
      const path = `/v1/organizations/${org}/transfer`
      assert.strictEqual((yield* api("POST", path, { user_id: stranger.user_id })).status, 404)
      assert.strictEqual((yield* api("POST", path, { user_id: owner.user_id })).status, 422)
      assert.strictEqual((yield* api("POST", path, { user_id: "x" })).status, 422)
      assert.strictEqual((yield* as(heir.browser)("POST", path, { user_id: heir.userId })).body.code, "forbidden")
      assert.strictEqual((yield* api("POST", path, { user_id: heir.userId })).status, 204)
      const roles = (yield* api("GET", `/v1/organizations/${org}/members`)).body.items.map((
        m: any
      ) => [m.email, m.role])
      assert.deepStrictEqual(roles, [["heir@example.com", "owner"], ["owner@example.com", "admin"]])
      // No longer the owner: transferring again or deleting is refused.
      assert.strictEqual((yield* api("POST", path, { user_id: heir.userId })).body.code, "forbidden")
      assert.strictEqual((yield* api("DELETE", `/v1/organizations/${org}`)).body.code, "forbidden")
    }))
})

describe("organization deletion", () => {
  it.scoped("needs a sign-in within 15 minutes; then the organization answers 404 to all and its machines stop", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const server = yield* startServer()
      const { api, browser, org, owner, as } = yield* ownerOf(server)
      const member = yield* joined(server, browser, org, "member@example.com", "operator")
      const pendingInvitation = yield* invite(server, browser, org, "pending@example.com", "member")
      const key = client(server.url, { key: owner.api_key })
      const machineId = yield* runningMachine(key, "doomed")
      yield* TestClock.adjust("16 minutes")
      const stale = yield* api("DELETE", `/v1/organizations/${org}`)
      assert.strictEqual(stale.status, 403)
      assert.strictEqual(stale.body.code, "recent_auth_required")
      assert.strictEqual((yield* as(member.browser)("DELETE", `/v1/organizations/${org}`)).body.code, "forbidden")

      const fresh = yield* signIn(server, "owner@example.com")
      const deleted = yield* fresh.http("DELETE", `/v1/organizations/${org}`, {
        headers: { ...fresh.withCsrf, "x-organization-id": org }
      })
      assert.strictEqual(deleted.status, 200, deleted.text)
      assert.deepStrictEqual(deleted.body, {
        organization_id: org,
        api_keys_revoked: 1,
        channels_revoked: 0,
        machines_stopping: 1,
        members_removed: 2,
        tickets_revoked: 0
      })
      for (
        const reply of [
          yield* api("GET", `/v1/organizations/${org}/members`),
          yield* as(member.browser)("GET", `/v1/organizations/${org}/members`)
        ]
      ) assert.strictEqual(reply.status, 404)
      assert.strictEqual((yield* key("GET", "/v1/me")).body.code, "invalid_api_key")
      assert.strictEqual((yield* member.browser.http("GET", "/v1/me")).body.active_organization_id, null)
      const pending = yield* signIn(server, "pending@example.com")
      const token = pendingInvitation.token
      assert.strictEqual(
        (yield* pending.http("POST", "/v1/invitations/accept", { headers: pending.withCsrf, json: { token } })).status,
        404
      )
      // The machine stops with the reason (read in the database: no one may see the organization any more).
      const stop = yield* eventually(Effect.sync(() => {
        const db = new Database(server.config.databaseFile, { readonly: true })
        const row = db.prepare(
          `SELECT o.status, o.stop_reason, m.state FROM operations o JOIN machines m ON m.id = o.machine_id
            WHERE o.machine_id = ? AND o.kind = 'stop'`
        ).get(machineId) as { status: string; stop_reason: string; state: string } | undefined
        db.close()
        return row?.status === "succeeded" ? row : undefined
      }))
      assert.deepStrictEqual(stop, { status: "succeeded", stop_reason: "organization_deleted", state: "stopped" })
    }))
})
