/**
 * Organizations and memberships as services: bootstrap makes one owned organization and reuses it,
 * members are listed with their address and running machines, and a session's active organization
 * is one of its user's or none.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Accounts } from "../../src/identity/Accounts.js"
import { Sessions } from "../../src/identity/Sessions.js"
import { Organizations } from "../../src/organizations/Organizations.js"
import { execute, withAreas } from "../identity/support.js"

const activeOf = (sessionId: string) =>
  Effect.map(
    execute("SELECT active_organization_id FROM sessions WHERE id = ?", sessionId),
    (rows) => (rows[0] as { active_organization_id: string | null }).active_organization_id
  )

describe("organizations", () => {
  it.scoped("bootstrap makes one organization the user owns, and a second bootstrap reuses it", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const organizations = yield* Organizations
        const first = yield* accounts.bootstrap("Owner@Example.com", "Acme")
        const second = yield* accounts.bootstrap("owner@example.com")
        assert.strictEqual(second.user_id, first.user_id)
        assert.strictEqual(second.organization_id, first.organization_id)
        assert.notStrictEqual(second.api_key, first.api_key)
        const mine = yield* organizations.organizationsOf(first.user_id)
        assert.deepStrictEqual(mine.map((o) => [o.name, o.role]), [["Acme", "owner"]])
        assert.deepStrictEqual(
          Option.map(yield* organizations.membership(first.organization_id, first.user_id), (m) => m.role),
          Option.some("owner" as const)
        )
        const stranger = yield* accounts.bootstrap("stranger@example.com")
        assert.isTrue(Option.isNone(yield* organizations.membership(first.organization_id, stranger.user_id)))
        assert.notStrictEqual(stranger.organization_id, first.organization_id)
      })
    ))

  it.scoped("members are listed in joining order with their address and the machines each runs", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const owner = yield* accounts.bootstrap("owner@example.com")
        const member = yield* accounts.bootstrap("member@example.com")
        yield* execute(
          "INSERT INTO memberships (organization_id, user_id, role, joined_at) VALUES (?, ?, 'member', ?)",
          owner.organization_id,
          member.user_id,
          Date.now() + 1
        )
        const machine = (id: string, state: string) =>
          execute(
            `INSERT INTO machines (id, organization_id, created_by, name, state, projected_state, size, image,
              internet_access, source_kind, created_at, updated_at)
              VALUES (?, ?, ?, ?, ?, ?, 'default', 'base', 1, 'image', 0, 0)`,
            id,
            owner.organization_id,
            member.user_id,
            id,
            state,
            state
          )
        yield* machine("0193a000-0000-7000-8000-000000000001", "running")
        yield* machine("0193a000-0000-7000-8000-000000000002", "running")
        yield* machine("0193a000-0000-7000-8000-000000000003", "stopped")
        const members = yield* (yield* Organizations).members(owner.organization_id)
        const addresses = yield* (yield* Accounts).addressesOf(members.map((m) => m.user_id))
        assert.deepStrictEqual(members.map((m) => [addresses.get(m.user_id), m.role, m.running_machines]), [
          ["owner@example.com", "owner", 0],
          ["member@example.com", "member", 2]
        ])
      })
    ))

  it.scoped("a session's active organization is one its user belongs to, or none", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const sessions = yield* Sessions
        const owner = yield* accounts.bootstrap("owner@example.com")
        const stranger = yield* accounts.bootstrap("stranger@example.com")
        const session = (yield* sessions.create(owner.user_id, owner.organization_id)).row
        const me = { id: session.id, userId: owner.user_id }

        yield* sessions.setActiveOrganization(me, null)
        assert.isNull(yield* activeOf(session.id))
        const refused = yield* Effect.flip(sessions.setActiveOrganization(me, stranger.organization_id))
        assert.strictEqual(refused._tag, "resource_not_found")
        assert.isNull(yield* activeOf(session.id))
        yield* sessions.setActiveOrganization(me, owner.organization_id)
        assert.strictEqual(yield* activeOf(session.id), owner.organization_id)
      })
    ))
})
