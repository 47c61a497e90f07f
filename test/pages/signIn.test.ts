/**
 * The sign-in and account pages (console/src/pages/) in a real browser (chromium): e-mail sign-in by code and by magic link,
 * the `?error=` words, the home page with the user's organizations, and signing out.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { newPage, screenshot, step, unlabelledFields } from "../support/Browser.js"
import { request } from "../support/Http.js"
import { codeFrom, latestMailTo, linkFrom } from "../support/SignIn.js"
import { startServer } from "../support/TestServer.js"

describe("sign-in pages", () => {
  it.scopedLive(
    "signs in by e-mail code, shows the account, links another address, and signs out",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const { page } = yield* newPage()
        yield* step(() => page.goto(`${server.url}/`))
        assert.strictEqual(new URL(page.url()).pathname, "/sign-in")
        yield* screenshot(page, "sign-in")
        assert.deepStrictEqual(yield* unlabelledFields(page), [])
        yield* step(() => page.getByLabel("Email address", { exact: true }).fill("ada@example.com"))
        yield* step(() => page.getByRole("button", { name: "Email me a code" }).click())
        yield* step(() => page.getByLabel("6-digit code").waitFor())
        const code = codeFrom((yield* latestMailTo(server, "ada@example.com")).text)!
        yield* screenshot(page, "sign-in-code")
        yield* step(() => page.getByLabel("6-digit code").fill(code))
        yield* step(() => page.keyboard.press("Enter"))
        yield* step(() => page.waitForURL(`${server.url}/`))
        assert.strictEqual(yield* step(() => page.locator("#who").textContent()), "ada@example.com")
        assert.match((yield* step(() => page.locator("#organizations").textContent()))!, /owner/)
        // `/` is the console; the account (its addresses, linking another) is at /account.
        yield* step(() => page.goto(`${server.url}/account`))
        assert.strictEqual(yield* step(() => page.locator("#who").textContent()), "ada@example.com")
        yield* step(() => page.getByLabel("Add another email address").fill("ada.work@example.com"))
        yield* step(() => page.getByRole("button", { name: "Send a code" }).click())
        yield* step(() => page.getByLabel("Code from that address").waitFor())
        const mailed = (yield* latestMailTo(server, "ada.work@example.com")).text
        yield* step(() =>
          page.getByLabel("Code from that address").fill(/link this address is (\d{6})/.exec(mailed)![1]!)
        )
        yield* step(() => page.getByRole("button", { name: "Add the address" }).click())
        yield* step(() => page.locator("#identities li", { hasText: "ada.work@example.com" }).waitFor())
        yield* screenshot(page, "home")
        assert.deepStrictEqual(yield* unlabelledFields(page), [])
        yield* step(() => page.getByRole("button", { name: "Sign out" }).click())
        yield* step(() => page.waitForURL(`${server.url}/sign-in`))
        yield* step(() => page.goto(`${server.url}/`))
        assert.strictEqual(new URL(page.url()).pathname, "/sign-in")
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "a wrong code says so; the magic link signs in in the same browser and returns where asked",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const { page } = yield* newPage({ phone: true })
        yield* step(() => page.goto(`${server.url}/sign-in?return_to=${encodeURIComponent("/")}`))
        yield* step(() => page.getByLabel("Email address", { exact: true }).fill("link@example.com"))
        yield* step(() => page.getByRole("button", { name: "Email me a code" }).click())
        yield* step(() => page.getByLabel("6-digit code").waitFor())
        const mail = yield* latestMailTo(server, "link@example.com")
        const code = codeFrom(mail.text)!
        yield* step(() => page.getByLabel("6-digit code").fill(code === "000000" ? "000001" : "000000"))
        yield* step(() => page.getByRole("button", { name: "Sign in" }).click())
        yield* step(() => page.getByText("That code is wrong").waitFor())
        yield* screenshot(page, "sign-in-wrong-code-phone")
        yield* step(() => page.goto(linkFrom(mail.text)!))
        yield* step(() => page.waitForURL(`${server.url}/`))
        assert.strictEqual(yield* step(() => page.locator("#who").textContent()), "link@example.com")
      }),
    { timeout: 60_000 }
  )

  it.scopedLive("an ?error= code is shown in words, and unknown codes in general words", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const { page } = yield* newPage({ dark: true })
      yield* step(() => page.goto(`${server.url}/sign-in?error=session_expired`))
      assert.match((yield* step(() => page.getByRole("alert").textContent()))!, /expired or was already used/)
      yield* screenshot(page, "sign-in-error-dark")
      yield* step(() => page.goto(`${server.url}/sign-in?error=%3Cscript%3Ealert(1)%3C/script%3E`))
      assert.strictEqual(yield* step(() => page.getByRole("alert").textContent()), "Sign-in failed. Please try again.")
      const raw = yield* request(server.url, "GET", "/sign-in")
      assert.match(raw.headers.get("content-type")!, /^text\/html; charset=utf-8/)
      assert.strictEqual(raw.headers.get("cache-control"), "no-store")
      assert.match(
        raw.headers.get("content-security-policy")!,
        /^default-src 'none'; script-src 'self'; style-src 'self' 'nonce-[\w-]+'/
      )
      assert.notInclude(raw.headers.get("content-security-policy")!, "unsafe-inline")
      assert.strictEqual(raw.headers.get("x-frame-options"), "DENY")
    }), { timeout: 60_000 })
})
