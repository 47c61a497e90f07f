/**
 * The device page and the provider button in a real browser (chromium): signing in through the
 * test OpenID provider, approving a device code (signing in first when needed, choosing preset,
 * name and lifetime) and denying one typed by hand.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { newPage, screenshot, step } from "../support/Browser.js"
import { request } from "../support/Http.js"
import { startProvider } from "../support/OidcProvider.js"
import { codeFrom, latestMailTo } from "../support/SignIn.js"
import { startServer } from "../support/TestServer.js"

const grantType = "urn:ietf:params:oauth:grant-type:device_code"

describe("device and provider pages", () => {
  it.scopedLive("signs in through the OpenID provider's button", () =>
    Effect.gen(function*() {
      const op = yield* startProvider
      const server = yield* startServer({ oidcProviders: [op.setting()] })
      op.allow(`${server.url}/v1/auth/callback`)
      op.next = { sub: "ada-sub", email: "ada@example.com", email_verified: true }
      const { page } = yield* newPage()
      yield* step(() => page.goto(`${server.url}/sign-in`))
      yield* screenshot(page, "sign-in-with-provider")
      yield* step(() => page.getByRole("link", { name: "Test Provider" }).click())
      yield* step(() => page.waitForURL(`${server.url}/`))
      assert.strictEqual(yield* step(() => page.locator("#who").textContent()), "ada@example.com")

      op.next = "refuse"
      const other = yield* newPage()
      yield* step(() => other.page.goto(`${server.url}/sign-in`))
      yield* step(() => other.page.getByRole("link", { name: "Test Provider" }).click())
      yield* step(() => other.page.waitForURL(/error=access_denied/))
      assert.match((yield* step(() => other.page.getByRole("alert").textContent()))!, /refused/)
    }), { timeout: 60_000 })

  it.scopedLive("approves a device after signing in, and denies a code typed by hand", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const code = yield* request(server.url, "POST", "/v1/auth/device/code", { json: { client_name: "laptop" } })
      const { page } = yield* newPage({ phone: true })
      yield* step(() => page.goto(code.body.verification_uri_complete))
      assert.strictEqual(new URL(page.url()).pathname, "/sign-in")
      yield* step(() => page.getByLabel("Email address", { exact: true }).fill("ada@example.com"))
      yield* step(() => page.getByRole("button", { name: "Email me a code" }).click())
      yield* step(() => page.getByLabel("6-digit code").waitFor())
      const mailed = codeFrom((yield* latestMailTo(server, "ada@example.com")).text)!
      yield* step(() => page.getByLabel("6-digit code").fill(mailed))
      yield* step(() => page.getByRole("button", { name: "Sign in" }).click())
      yield* step(() => page.waitForURL(/\/device\?user_code=/))
      assert.strictEqual(yield* step(() => page.locator("#confirm-code").textContent()), code.body.user_code)
      yield* step(() => page.getByLabel("Access", { exact: true }).selectOption("read_only"))
      yield* step(() => page.getByLabel("Key name").fill("Ada's laptop"))
      yield* step(() => page.getByLabel("Valid for (days, 1-90)").fill("7"))
      yield* screenshot(page, "device-approve-phone")
      yield* step(() => page.getByRole("button", { name: "Approve" }).click())
      yield* step(() => page.getByText("Approved.").waitFor())
      yield* screenshot(page, "device-approved-phone")
      const issued = yield* request(server.url, "POST", "/v1/auth/device/token", {
        json: { device_code: code.body.device_code, grant_type: grantType }
      })
      assert.strictEqual(issued.status, 200, issued.text)
      assert.strictEqual(issued.body.scope, "read_only")
      assert.strictEqual(issued.body.api_key.name, "Ada's laptop")
      assert.strictEqual(issued.body.expires_in, 7 * 86400)

      const second = yield* request(server.url, "POST", "/v1/auth/device/code", { json: {} })
      yield* step(() => page.goto(`${server.url}/device`))
      yield* screenshot(page, "device-enter-phone")
      yield* step(() => page.getByLabel("Code shown on your device").fill(second.body.user_code.toLowerCase()))
      yield* step(() => page.keyboard.press("Enter"))
      yield* step(() => page.getByRole("button", { name: "Deny" }).click())
      yield* step(() => page.getByText("Denied.").waitFor())
      const refused = yield* request(server.url, "POST", "/v1/auth/device/token", {
        json: { device_code: second.body.device_code, grant_type: grantType }
      })
      assert.strictEqual(refused.body.error, "access_denied")

      yield* step(() => page.goto(`${server.url}/device?user_code=BCDF-GHJK`))
      assert.match((yield* step(() => page.getByRole("alert").textContent()))!, /unknown, expired or already used/)
      yield* screenshot(page, "device-unknown-phone")
    }), { timeout: 60_000 })
})
