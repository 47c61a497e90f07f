/**
 * Member changes at the service: never without an owner, even when the owners act at the same
 * instant; a removal ends the member's keys in that organization only.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { Accounts } from "../../src/identity/Accounts.js"
import { ApiKeys } from "../../src/identity/ApiKeys.js"
import { Members } from "../../src/organizations/Members.js"
import { failureTag, owner, services } from "../support/Services.js"

/** A second user who joins `organizationId` with `role` (bootstrap gives them an organization of their own too). */
const joining = (context: Context.Context<any>, organizationId: string, email: string, role: "owner" | "member") =>
  Effect.gen(function*() {
    const made = yield* Context.get(context, Accounts).bootstrap(email)
    const sql = Context.get(context, SqlClient.SqlClient)
    yield* sql`INSERT INTO memberships (organization_id, user_id, role, joined_at)
      VALUES (${organizationId}, ${made.user_id}, ${role}, ${Date.now()})`
    return made
  })

describe("members at the service", () => {
  it.scoped("two owners demoting each other at once: exactly one stays owner", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const members = Context.get(context, Members)
      const first = yield* owner(context, "first@example.com")
      const second = yield* joining(context, first.organizationId, "second@example.com", "owner")
      const actor = (userId: string) => ({ organizationId: first.organizationId, userId, role: "owner" as const })
      const outcomes = yield* Effect.all([
        failureTag(members.change(actor(first.userId), second.user_id, { role: "admin" })),
        failureTag(members.change(actor(second.user_id), first.userId, { role: "admin" }))
      ], { concurrency: 2 })
      assert.deepStrictEqual([...outcomes].sort(), ["last_owner", "succeeded"])
      const mine = yield* Context.get(context, Accounts).membership(first.organizationId, first.userId)
      const other = yield* Context.get(context, Accounts).membership(first.organizationId, second.user_id)
      const owners = [mine, other].filter((m) => m._tag === "Some" && m.value.role === "owner")
      assert.strictEqual(owners.length, 1)
    }))

  it.scoped("removing a member revokes their keys of that organization, not of their own", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const members = Context.get(context, Members)
      const apiKeys = Context.get(context, ApiKeys)
      const first = yield* owner(context, "first@example.com")
      const joined = yield* joining(context, first.organizationId, "joined@example.com", "member")
      const mint = (organizationId: string) =>
        apiKeys.mint({ organizationId, userId: joined.user_id, name: "k", preset: "read_only", expiresInDays: 1 })
      const here = yield* mint(first.organizationId)
      yield* mint(first.organizationId)
      const elsewhere = yield* mint(joined.organization_id)
      const removed = yield* members.remove(
        { organizationId: first.organizationId, userId: first.userId, role: "owner" },
        joined.user_id
      )
      assert.strictEqual(removed.api_keys_revoked, 2)
      assert.strictEqual(yield* failureTag(apiKeys.authenticate(here.secret)), "invalid_api_key")
      assert.strictEqual((yield* apiKeys.authenticate(elsewhere.secret)).organization_id, joined.organization_id)
    }))
})
