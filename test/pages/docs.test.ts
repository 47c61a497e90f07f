/**
 * The /docs page in a real browser (chromium): it renders the reference and everything it asks
 * for (scripts, fonts, styles, the document, anything else) comes from svc's own origin.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { newPage, screenshot, step } from "../support/Browser.js"
import { startServer } from "../support/TestServer.js"

describe("docs page", () => {
  it.scopedLive(
    "/docs loads nothing from outside svc",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const { page } = yield* newPage()
        page.setDefaultTimeout(90_000)
        const requested: Array<string> = []
        page.on("request", (request) => requested.push(request.url()))
        yield* step(() => page.goto(`${server.url}/docs`, { waitUntil: "load", timeout: 90_000 }))
        // Rendered: the reference names its routes.
        yield* step(() => page.getByText("/v1/machines").first().waitFor())
        yield* screenshot(page, "docs")
        const origin = new URL(server.url).origin
        const outside = requested.filter((url) => !url.startsWith("data:") && new URL(url).origin !== origin)
        assert.deepStrictEqual(outside, [], `requested: ${requested.join(", ")}`)
      }),
    { timeout: 180_000 }
  )
})
