/**
 * API keys as services see them: a key acts with its creator's current role, stops at its
 * revocation and at its expiry (TestClock), and members manage only the keys they may see.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { Accounts } from "../../src/identity/Accounts.js"
import { ApiKeys, type KeyManager } from "../../src/identity/ApiKeys.js"
import { Roles } from "../../src/kernel/domain/Access.js"
import { Authenticate, type Requirement } from "../../src/kernel/http/Authenticate.js"
import { bearer, execute, requestOf, withAreas } from "./support.js"

const anyMember: Requirement = { access: "R", organization: "header", roles: Roles.anyMember }
const ownersOnly: Requirement = { access: "R", organization: "header", roles: ["owner"] }

/** Authenticates a GET carrying `key`. */
const withKey = (key: string, requirement: Requirement) =>
  Effect.flatMap(
    Authenticate,
    ({ authenticate }) => authenticate(requestOf("GET", { headers: bearer(key) }), requirement)
  )

describe("API keys", () => {
  it.scoped("a key acts with its creator's current role: a demotion limits it at once, a removal refuses it", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const owner = yield* (yield* Accounts).bootstrap("owner@example.com")
        const caller = yield* withKey(owner.api_key, ownersOnly)
        assert.deepStrictEqual(caller.organization, Option.some({ id: owner.organization_id, role: "owner" as const }))
        assert.deepStrictEqual(caller.user, Option.some({ id: owner.user_id, email: "owner@example.com" }))

        yield* execute("UPDATE memberships SET role = 'member' WHERE user_id = ?", owner.user_id)
        const demoted = yield* Effect.flip(withKey(owner.api_key, ownersOnly))
        assert.strictEqual(demoted._tag, "forbidden")
        assert.include(demoted.detail, "member")
        const asMember = yield* withKey(owner.api_key, anyMember)
        assert.deepStrictEqual(Option.map(asMember.organization, (o) => o.role), Option.some("member" as const))

        yield* execute("DELETE FROM memberships WHERE user_id = ?", owner.user_id)
        const removed = yield* Effect.flip(withKey(owner.api_key, anyMember))
        assert.strictEqual(removed._tag, "forbidden")
        assert.include(removed.detail, "no longer a member")
        // Routes outside any organization still know the key's owner.
        yield* withKey(owner.api_key, { access: "R", organization: "none" })
      })
    ))

  it.scoped("a key stops working at its revocation and at its expiry", () =>
    withAreas(() =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.parse("2026-11-22T12:00:00Z"))
        const apiKeys = yield* ApiKeys
        const owner = yield* (yield* Accounts).bootstrap("owner@example.com")
        const mint = (name: string) =>
          apiKeys.mint({
            organizationId: owner.organization_id,
            userId: owner.user_id,
            name,
            preset: "read_only",
            expiresInDays: 1
          })
        const short = yield* mint("short")
        const gone = yield* mint("gone")
        yield* withKey(short.secret, anyMember)
        yield* withKey(gone.secret, anyMember)

        const manager: KeyManager = {
          organizationId: owner.organization_id,
          userId: owner.user_id,
          role: "owner",
          keyPreset: undefined
        }
        yield* apiKeys.revoke(manager, gone.row.id)
        const revoked = yield* Effect.flip(withKey(gone.secret, anyMember))
        assert.strictEqual(revoked._tag, "invalid_api_key")
        assert.include(revoked.detail, "revoked")

        yield* TestClock.adjust("23 hours")
        yield* withKey(short.secret, anyMember)
        yield* TestClock.adjust("1 hours")
        const expired = yield* Effect.flip(withKey(short.secret, anyMember))
        assert.strictEqual(expired._tag, "invalid_api_key")
        assert.include(expired.detail, "expired")
        // The bootstrap key (a year) still works.
        yield* withKey(owner.api_key, anyMember)
      })
    ))

  it.scoped("malformed and unknown keys are invalid; last_used_at is written at most once a minute", () =>
    withAreas(() =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.parse("2026-11-22T12:00:00Z"))
        const owner = yield* (yield* Accounts).bootstrap("owner@example.com")
        for (const text of ["nope", "svc_abcdefgh_" + "x".repeat(40), owner.api_key.slice(0, -1) + "#"]) {
          assert.strictEqual((yield* Effect.flip(withKey(text, anyMember)))._tag, "invalid_api_key", text)
        }
        const lastUsed = Effect.map(
          execute("SELECT last_used_at FROM api_keys WHERE created_by = ?", owner.user_id),
          (rows) => (rows[0] as { last_used_at: number | null }).last_used_at
        )
        assert.isNull(yield* lastUsed)
        const first = Date.parse("2026-11-22T12:00:00Z")
        yield* withKey(owner.api_key, anyMember)
        assert.strictEqual(yield* lastUsed, first)
        yield* TestClock.adjust("59 seconds")
        yield* withKey(owner.api_key, anyMember)
        assert.strictEqual(yield* lastUsed, first)
        yield* TestClock.adjust("1 seconds")
        yield* withKey(owner.api_key, anyMember)
        assert.strictEqual(yield* lastUsed, first + 60_000)
      })
    ))

  it.scoped("owners and admins see and revoke every key, members only their own; a key creates keys up to its preset", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const apiKeys = yield* ApiKeys
        const owner = yield* (yield* Accounts).bootstrap("owner@example.com")
        const member = yield* (yield* Accounts).bootstrap("member@example.com")
        yield* execute(
          "INSERT INTO memberships (organization_id, user_id, role, joined_at) VALUES (?, ?, 'member', 0)",
          owner.organization_id,
          member.user_id
        )
        const as = (userId: string, role: KeyManager["role"], keyPreset?: KeyManager["keyPreset"]): KeyManager => ({
          organizationId: owner.organization_id,
          userId,
          role,
          keyPreset
        })
        const ownerManager = as(owner.user_id, "owner")
        const memberManager = as(member.user_id, "member")
        const mine = yield* apiKeys.create(memberManager, { name: "mine", preset: "read_only", expiresInDays: 30 })
        const names = (rows: ReadonlyArray<{ readonly name: string }>) => rows.map((row) => row.name).sort()
        assert.deepStrictEqual(names(yield* apiKeys.list(ownerManager)), ["bootstrap", "mine"])
        assert.deepStrictEqual(names(yield* apiKeys.list(memberManager)), ["mine"])
        assert.deepStrictEqual(names(yield* apiKeys.list(as(member.user_id, "admin"))), ["bootstrap", "mine"])

        const ownersKey = (yield* apiKeys.list(ownerManager)).find((row) => row.name === "bootstrap")!
        const refused = yield* Effect.flip(apiKeys.revoke(memberManager, ownersKey.id))
        assert.strictEqual(refused._tag, "resource_not_found")
        yield* apiKeys.revoke(ownerManager, mine.row.id)
        assert.isNotNull((yield* apiKeys.list(memberManager))[0]!.revoked_at)
        // A key of another organization is not found, whatever the role here.
        const [othersKey] = yield* execute("SELECT id FROM api_keys WHERE organization_id = ?", member.organization_id)
        const foreign = yield* Effect.flip(apiKeys.revoke(ownerManager, (othersKey as { id: string }).id))
        assert.strictEqual(foreign._tag, "resource_not_found")

        const byKey = as(owner.user_id, "owner", "use_existing")
        yield* apiKeys.create(byKey, { name: "same", preset: "use_existing", expiresInDays: 1 })
        const above = yield* Effect.flip(
          apiKeys.create(byKey, { name: "above", preset: "create_and_use", expiresInDays: 1 })
        )
        assert.strictEqual(above._tag, "insufficient_scope")
        yield* apiKeys.create(ownerManager, { name: "session", preset: "full_access", expiresInDays: 1 })
      })
    ))
})
