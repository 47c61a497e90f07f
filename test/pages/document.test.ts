/**
 * The console's document (src/pages/ConsolePage.ts): what svc puts into it about a page can never
 * become markup, each response has its own nonce, and no inline script is allowed to run.
 */
import { HttpServerResponse } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { consoleDocument, escapeHtml } from "../../src/pages/ConsolePage.js"
import type { SignInPageData } from "../../src/pages/PageData.js"

const build = { files: {}, script: "console-AAAA.js", style: "console-BBBB.css" }

const textOf = (response: HttpServerResponse.HttpServerResponse) =>
  new TextDecoder().decode((response.body as { body: Uint8Array }).body)

describe("console document", () => {
  it("escapes every character that could start markup or end an attribute", () => {
    assert.strictEqual(
      escapeHtml(`<img src=x onerror="alert(1)">'&\``),
      "&#60;img src=x onerror=&#34;alert(1)&#34;&#62;&#39;&#38;&#96;"
    )
  })

  it("carries a page's data as escaped JSON that reads back whole, under a fresh nonce and no inline script", () => {
    const hostile = `"><script>alert(1)</script>\u2028'&`
    const page: SignInPageData = {
      page: "sign-in",
      returnTo: `/${hostile}`,
      error: hostile,
      access: "open",
      waitlistUrl: null,
      providers: [],
      signedInAs: "<a>"
    }
    const spec = { build, apiBase: "http://127.0.0.1:1", uiUrl: "http://127.0.0.1:1", uiPath: "", page, status: 404 }
    const first = consoleDocument(spec)
    const second = consoleDocument(spec)
    assert.strictEqual(first.status, 404)
    const html = textOf(first)
    assert.notInclude(html, "<script>")
    assert.notInclude(html, "<a>")
    const content = /<meta name="svc-page" content="([^"]*)">/.exec(html)![1]!
    const decoded = content.replace(/&#(\d+);/g, (_, code) => String.fromCharCode(Number(code)))
    assert.deepStrictEqual(JSON.parse(decoded), page)
    assert.include(html, `<title>Sign in · svc</title>`)
    const policy = first.headers["content-security-policy"]!
    assert.match(policy, /^default-src 'none'; script-src 'self'; style-src 'self' 'nonce-[\w-]+'/)
    assert.notInclude(policy, "unsafe-inline")
    assert.notStrictEqual(policy, second.headers["content-security-policy"])
  })
})
