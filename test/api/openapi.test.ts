/** The exported OpenAPI document in schema/ is the one the API definition generates. */
import { OpenApi } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import * as NodeFs from "node:fs"
import { Api } from "../../src/Api.js"

describe("openapi", () => {
  it("schema/openapi.json is current (regenerate with npm run openapi)", () => {
    const committed = JSON.parse(NodeFs.readFileSync("schema/openapi.json", "utf8"))
    assert.deepStrictEqual(committed, JSON.parse(JSON.stringify(OpenApi.fromApi(Api))))
  })
})
