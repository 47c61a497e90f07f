/**
 * The device grant as a service: the key is the approving user's and acts with that user's role of
 * the moment; an approver who left the organization before the poll gets the device access_denied.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Accounts } from "../../src/identity/Accounts.js"
import { ApiKeys } from "../../src/identity/ApiKeys.js"
import { DEVICE_GRANT_TYPE, DeviceGrant } from "../../src/identity/DeviceGrant.js"
import { execute, withAreas } from "./support.js"

const approved = Effect.gen(function*() {
  const grant = yield* DeviceGrant
  const owner = yield* (yield* Accounts).bootstrap("ada@example.com")
  const code = yield* grant.request("laptop", "full_access", "127.0.0.1")
  yield* grant.approve(owner.user_id, owner.organization_id, {
    userCode: code.userCode,
    expiresInDays: null,
    name: null,
    preset: null
  })
  return { grant, owner, code }
})

describe("device grant", () => {
  it.scoped("the key is the approver's and acts with the approver's current role", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { code, grant, owner } = yield* approved
        yield* execute("UPDATE memberships SET role = 'billing' WHERE user_id = ?", owner.user_id)
        const issued = yield* grant.poll(code.deviceCode, DEVICE_GRANT_TYPE)
        assert.strictEqual(issued.key.row.created_by, owner.user_id)
        assert.strictEqual(issued.key.row.preset, "full_access")
        const key = yield* (yield* ApiKeys).authenticate(issued.key.secret)
        assert.strictEqual(key.owner_role, "billing")
        yield* execute("UPDATE memberships SET role = 'operator' WHERE user_id = ?", owner.user_id)
        assert.strictEqual((yield* (yield* ApiKeys).authenticate(issued.key.secret)).owner_role, "operator")
      })
    ))

  it.scoped("an approver who left the organization before the poll: access_denied, and no key", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { code, grant, owner } = yield* approved
        yield* execute("DELETE FROM memberships WHERE user_id = ?", owner.user_id)
        const refused = yield* Effect.flip(grant.poll(code.deviceCode, DEVICE_GRANT_TYPE))
        assert.strictEqual(refused.error, "access_denied")
        const keys = yield* execute("SELECT count(*) AS n FROM api_keys WHERE name LIKE 'laptop%'")
        assert.strictEqual((keys[0] as { n: number }).n, 0)
      })
    ))
})
