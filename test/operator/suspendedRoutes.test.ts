/**
 * Which routes a suspended organization is refused, decided by one rule over each endpoint's Policy
 * (src/kernel/http/Policy.ts): every organization change of access U or C, unless it opts out. The
 * full list is pinned here, so a new route's answer is a decision someone saw.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Option } from "effect"
import { Api } from "../../src/Api.js"
import { Roles } from "../../src/kernel/domain/Access.js"
import { Policy, policy, refusedWhileSuspended } from "../../src/kernel/http/Policy.js"

const refused = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).flatMap((endpoint) => {
    const spec = Option.getOrThrow(Context.getOption(endpoint.annotations, Policy))
    return refusedWhileSuspended(endpoint.method, spec) ? [`${endpoint.method} ${endpoint.path}`] : []
  })
).sort()

describe("routes refused while suspended", () => {
  it("every route that runs or makes machines, and nothing else", () => {
    assert.deepStrictEqual(refused, [
      "POST /v1/machines",
      "POST /v1/machines/:id/agents/prompt",
      "POST /v1/machines/:id/agents/steer",
      "POST /v1/machines/:id/exec",
      "POST /v1/machines/:id/files/read",
      "POST /v1/machines/:id/files/write",
      "POST /v1/machines/:id/fork",
      "POST /v1/machines/:id/ports",
      "POST /v1/machines/:id/ports/:port/tokens",
      "POST /v1/machines/:id/restart",
      "POST /v1/machines/:id/restore",
      "POST /v1/machines/:id/ssh-keys",
      "POST /v1/machines/:id/start",
      "POST /v1/machines/:id/terminals",
      "PUT /v1/machines/:id/internet"
    ])
  })

  it("a route added later is refused by default when it changes an organization's machines", () => {
    assert.isTrue(refusedWhileSuspended("POST", policy("U", "header", Roles.machineChangers)))
    assert.isTrue(refusedWhileSuspended("POST", policy("C", "path", Roles.anyMember)))
    assert.isFalse(refusedWhileSuspended("GET", policy("U", "header", Roles.anyMember)))
    assert.isFalse(refusedWhileSuspended("POST", policy("F", "header", Roles.anyMember)))
    assert.isFalse(refusedWhileSuspended("POST", policy("O")))
    assert.isFalse(refusedWhileSuspended("POST", policy("U", "header", Roles.anyMember, { whileSuspended: "allowed" })))
    assert.isTrue(refusedWhileSuspended("POST", policy("F", "header", Roles.anyMember, { whileSuspended: "refused" })))
  })
})
