/**
 * The role table (test/api/roleTable.ts) against the API's own declarations, without a server: every
 * endpoint is in the table and every row is an endpoint; each endpoint's Policy names the table's
 * roles; the OpenAPI document carries them (`x-svc-roles`, a Roles sentence); docs/roles.md is the
 * page bin/roles-doc.mjs makes of the table. test/e2e/roles.test.ts holds the running server to it.
 */
import { OpenApi } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import { Api } from "../../src/Api.js"
import { policyIndex } from "../../src/kernel/http/AuthorizationLive.js"
import { isOutside, roleNames, roleTable, tableKey } from "./roleTable.js"

const policies = new Map([...policyIndex(Api)].map(([key, policy]) => {
  const [method, path] = key.split(" ") as [string, string]
  return [tableKey(method, path), policy]
}))

const sorted = (roles: ReadonlyArray<string>) =>
  [...roles].sort((a, b) => roleNames.indexOf(a as never) - roleNames.indexOf(b as never))

describe("roles of every route", () => {
  it("every endpoint is in the role table, and every row of the table is an endpoint", () => {
    const missing = [...policies.keys()].filter((key) => !roleTable.has(key))
    const stale = [...roleTable.keys()].filter((key) => !policies.has(key))
    assert.deepStrictEqual(missing, [], "routes without a row in test/api/roleTable.ts")
    assert.deepStrictEqual(stale, [], "rows of test/api/roleTable.ts that are no route")
  })

  it("each endpoint's Policy names the roles of its row; a route outside an organization names none", () => {
    for (const [key, policy] of policies) {
      const row = roleTable.get(key)!
      if (isOutside(row)) {
        assert.strictEqual(policy.organization, "none", key)
      } else {
        assert.notStrictEqual(policy.organization, "none", key)
        assert.deepStrictEqual(sorted(policy.roles ?? []), sorted(row), key)
      }
    }
  })

  it("the OpenAPI document names each operation's roles in x-svc-roles and in its description", () => {
    const document = JSON.parse(JSON.stringify(OpenApi.fromApi(Api)))
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(item)) {
        const key = `${method.toUpperCase()} ${path}`
        const row = roleTable.get(key)
        assert.isDefined(row, key)
        if (isOutside(row!)) {
          assert.notProperty(operation, "x-svc-roles", key)
          assert.notInclude(operation.description, "**Roles**", key)
        } else {
          assert.deepStrictEqual(sorted(operation["x-svc-roles"]), sorted(row!), key)
          const sentence = row!.length === roleNames.length
            ? "**Roles**: any member of the organization."
            : `**Roles**: ${row!.map((role) => `\`${role}\``).join(", ")}; any other member is refused with ` +
              "`403 forbidden`"
          assert.include(operation.description, sentence, key)
        }
      }
    }
  })

  it("docs/roles.md is the page bin/roles-doc.mjs makes of the table (regenerate with npm run roles-doc)", () => {
    const made = NodeChildProcess.execFileSync(process.execPath, ["bin/roles-doc.mjs"], { encoding: "utf8" })
    assert.strictEqual(NodeFs.readFileSync("docs/roles.md", "utf8"), made)
    for (const key of roleTable.keys()) assert.include(made, `\`${key}\``)
  })
})
