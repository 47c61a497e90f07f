/**
 * The published OpenAPI document: the one the API definition generates (schema/openapi.json and
 * docs/api.md, made from it, are current), and worth reading: every operation says what it does, who may call it, and which codes
 * each of its error statuses carries; request bodies say they refuse unknown members.
 */
import { OpenApi } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Either, Option, ParseResult, Schema } from "effect"
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { Api } from "../../src/Api.js"

const document = JSON.parse(JSON.stringify(OpenApi.fromApi(Api)))

const operations = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, method, operation }))
)

const resolve = (schema: any): any =>
  typeof schema?.$ref === "string"
    ? resolve(document.components.schemas[schema.$ref.replace("#/components/schemas/", "")])
    : schema

/** Every object schema inside `schema` (properties, items, unions), `$ref`s followed once. */
const objectsIn = (schema: any, seen = new Set<any>()): Array<any> => {
  const resolved = resolve(schema)
  if (resolved === undefined || typeof resolved !== "object" || seen.has(resolved)) return []
  seen.add(resolved)
  const nested = [
    ...Object.values(resolved.properties ?? {}),
    ...(resolved.items === undefined ? [] : [resolved.items]),
    ...(resolved.anyOf ?? []),
    ...(resolved.allOf ?? [])
  ]
  return [...(resolved.type === "object" ? [resolved] : []), ...nested.flatMap((child) => objectsIn(child, seen))]
}

describe("openapi", () => {
  it("schema/openapi.json is current (regenerate with npm run openapi)", () => {
    const committed = JSON.parse(NodeFs.readFileSync("schema/openapi.json", "utf8"))
    assert.deepStrictEqual(committed, document)
  })

  it("docs/api.md is the reference bin/api-doc.mjs makes of this document (regenerate with npm run openapi)", () => {
    const made = NodeChildProcess.execFileSync(process.execPath, ["bin/api-doc.mjs", "-"], {
      input: JSON.stringify(document),
      encoding: "utf8"
    })
    assert.strictEqual(NodeFs.readFileSync("docs/api.md", "utf8"), made)
    for (const { operation } of operations) assert.include(made, `(\`${operation.operationId}\`)`)
  })

  it("docs/ are self-contained: every file they link to is in the repository, no outside spec is cited", () => {
    for (const name of NodeFs.readdirSync("docs").filter((file) => file.endsWith(".md"))) {
      const text = NodeFs.readFileSync(`docs/${name}`, "utf8")
      assert.notMatch(text, /extensions\.md|shared\/spec|(?<![\w/.])api\.md(?!#)/, name)
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue
        assert.isTrue(NodeFs.existsSync(NodePath.join("docs", target!)), `${name} links to ${target}`)
      }
    }
  })

  it("every operation has a summary, a description ending with its access, and its group's tag", () => {
    const tags = new Map((document.tags as Array<{ name: string; description?: string }>).map((t) => [t.name, t]))
    assert.includeMembers([...tags.keys()], ["auth", "apiKeys", "members", "machines", "operations", "agents"])
    for (const tag of tags.values()) assert.isString(tag.description, tag.name)
    for (const { key, operation } of operations) {
      assert.isString(operation.summary, key)
      assert.isAbove(operation.summary.length, 5, key)
      assert.match(operation.description, /\*\*Access [RUCFSNO]\*\*/, key)
      assert.strictEqual(operation.tags.length, 1, key)
      assert.isTrue(tags.has(operation.tags[0]), key)
    }
  })

  it("security comes from each route's access code, with the CSRF header on a session's changes", () => {
    assert.deepStrictEqual(Object.keys(document.components.securitySchemes).sort(), [
      "apiKey",
      "csrf",
      "operatorToken",
      "session"
    ])
    assert.deepStrictEqual(document.components.securitySchemes.csrf.name, "X-CSRF-Token")
    assert.deepStrictEqual(document.components.securitySchemes.operatorToken.name, "X-Svc-Operator-Token")
    const security = (key: string) => operations.find((o) => o.key === key)!.operation.security
    assert.deepStrictEqual(security("GET /v1/machines"), [{ apiKey: [] }, { session: [] }])
    assert.deepStrictEqual(security("POST /v1/machines/{id}/exec"), [{ apiKey: [] }, { session: [], csrf: [] }])
    assert.deepStrictEqual(security("POST /v1/auth/logout"), [{ session: [], csrf: [] }])
    assert.deepStrictEqual(security("GET /v1/auth/providers"), [])
    const org = (key: string) =>
      operations.find((o) => o.key === key)!.operation.parameters.some((p: any) => p.name === "X-Organization-ID")
    assert.isTrue(org("POST /v1/machines"))
    assert.isFalse(org("GET /v1/me"))
  })

  it("each error status is a problem listing the codes the route answers with it", () => {
    for (const { key, operation } of operations) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        if (Number(status) < 400) continue
        // The device token route answers its 400 in RFC 8628's shape, as the OAuth clients expect.
        if (key === "POST /v1/auth/device/token" && status === "400") continue
        assert.match(response.description, /^`[a-z_]+`: /, `${key} ${status}`)
        assert.deepStrictEqual(Object.keys(response.content), ["application/problem+json"], `${key} ${status}`)
      }
      // svc answers a body it cannot decode with 422, never the platform's 400.
      assert.notInclude(JSON.stringify(operation.responses), "HttpApiDecodeError", key)
    }
    const create = operations.find((o) => o.key === "POST /v1/machines")!.operation.responses
    assert.include(create["409"].description, "`name_taken`")
    assert.include(create["403"].description, "`insufficient_scope`")
    // A route anyone may call answers no 401 or 403.
    const providers = operations.find((o) => o.key === "GET /v1/auth/providers")!.operation.responses
    assert.notProperty(providers, "401")
    assert.notProperty(providers, "403")
  })

  it("request bodies refuse unknown members at every depth; an all-optional body may be left out", () => {
    for (const { key, operation } of operations) {
      const schema = operation.requestBody?.content?.["application/json"]?.schema
      if (schema === undefined) continue
      for (const object of objectsIn(schema)) {
        if (object.additionalProperties === undefined || typeof object.additionalProperties === "object") {
          // A map (environment variables): its keys are constrained instead.
          assert.isDefined(object.propertyNames ?? object.patternProperties, `${key}: ${JSON.stringify(object)}`)
          continue
        }
        assert.strictEqual(object.additionalProperties, false, `${key}: ${JSON.stringify(object)}`)
      }
    }
    // What the document says is what the server does: each payload refuses a member it does not name.
    for (const group of Object.values(Api.groups)) {
      for (const endpoint of Object.values(group.endpoints)) {
        if (Option.isNone(endpoint.payloadSchema)) continue
        // Read loosely at the door and checked by the route, to answer in RFC 8628's shape
        // (test/e2e/device.test.ts proves an unknown member is refused).
        if (group.identifier === "device" && endpoint.name === "token") continue
        const decoded = Schema.decodeUnknownEither(endpoint.payloadSchema.value as Schema.Schema<unknown, unknown>)({
          no_such_member: 1
        })
        assert.isTrue(Either.isLeft(decoded), endpoint.name)
        const issues = ParseResult.ArrayFormatter.formatErrorSync((decoded as Either.Left<any, unknown>).left)
        assert.isTrue(
          issues.some((issue) => issue._tag === "Unexpected" && issue.path[0] === "no_such_member"),
          `${group.identifier}.${endpoint.name}: ${JSON.stringify(issues)}`
        )
      }
    }
    const body = (key: string) => operations.find((o) => o.key === key)!.operation.requestBody
    assert.strictEqual(body("POST /v1/machines/{id}/stop").required, false)
    assert.strictEqual(body("POST /v1/machines").required, true)
    assert.isUndefined(body("POST /v1/machines/{id}/start"))
  })
})
