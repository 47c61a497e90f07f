import { assert, describe, it } from "@effect/vitest"
import { keyAccess, presetAtMost, roleAllowed, Roles } from "../../../src/kernel/domain/Access.js"
import * as ApiKeyText from "../../../src/kernel/domain/ApiKeyText.js"

describe("access rules", () => {
  it("each access code admits exactly the presets of api.md", () => {
    const table = {
      R: ["allowed", "allowed", "allowed", "allowed"],
      U: ["insufficient_scope", "allowed", "allowed", "allowed"],
      C: ["insufficient_scope", "insufficient_scope", "allowed", "allowed"],
      F: ["insufficient_scope", "insufficient_scope", "insufficient_scope", "allowed"],
      S: ["session_required", "session_required", "session_required", "session_required"],
      N: ["allowed", "allowed", "allowed", "allowed"]
    } as const
    const presets = ["read_only", "use_existing", "create_and_use", "full_access"] as const
    for (const [access, expected] of Object.entries(table)) {
      presets.forEach((preset, i) =>
        assert.strictEqual(keyAccess(access as any, preset), expected[i], `${access} ${preset}`)
      )
    }
  })

  it("a key may create only keys whose preset is not above its own", () => {
    assert.isTrue(presetAtMost("read_only", "use_existing"))
    assert.isTrue(presetAtMost("full_access", "full_access"))
    assert.isFalse(presetAtMost("create_and_use", "use_existing"))
  })

  it("role groups", () => {
    assert.isTrue(roleAllowed("member", Roles.anyMember))
    assert.isTrue(roleAllowed("operator", Roles.machineChangers))
    assert.isFalse(roleAllowed("billing", Roles.machineChangers))
    assert.isTrue(roleAllowed("billing", Roles.billingManagers))
    assert.isFalse(roleAllowed("admin", Roles.owner))
  })

  it("API key text round-trips through parse", () => {
    const key = ApiKeyText.generate()
    assert.match(key.text, /^svc_[a-z0-9]{8}_[A-Za-z0-9]{40}$/)
    assert.strictEqual(ApiKeyText.parse(key.text), key.keyId)
    assert.isUndefined(ApiKeyText.parse("svc_short_abc"))
    assert.isUndefined(ApiKeyText.parse(key.text + "!"))
  })
})
