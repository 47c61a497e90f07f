/**
 * The invitation page in a real browser (chromium): the invited address, new under `invite_only`,
 * follows the mailed link, signs in by code, sees the organization and role, accepts, and finds
 * the organization on its home page; the used link, another user and a broken link get words.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { newPage, screenshot, step } from "../support/Browser.js"
import { invite } from "../support/Members.js"
import { codeFrom, latestMailTo, signIn } from "../support/SignIn.js"
import { startServer } from "../support/TestServer.js"

describe("invitation page", () => {
  it.scopedLive(
    "an invited address signs up through the link, accepts, and lands in the organization",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ signup: "invite_only" })
        const owner = yield* server.bootstrap("owner@example.com")
        const ownerBrowser = yield* signIn(server, "owner@example.com")
        yield* invite(server, ownerBrowser, owner.organization_id, "ada@example.com", "operator")
        const link = /(http:\/\/\S+\/invitations\/accept\?token=\S+)/.exec(
          (yield* latestMailTo(server, "ada@example.com")).text
        )![1]!

        const { page } = yield* newPage({ phone: true })
        yield* step(() => page.goto(link))
        // Not signed in: sign in first, then back to the invitation.
        assert.strictEqual(new URL(page.url()).pathname, "/sign-in")
        yield* step(() => page.getByLabel("Email address", { exact: true }).fill("ada@example.com"))
        yield* step(() => page.getByRole("button", { name: "Email me a code" }).click())
        yield* step(() => page.getByLabel("6-digit code").waitFor())
        const code = codeFrom((yield* latestMailTo(server, "ada@example.com")).text)!
        yield* step(() => page.getByLabel("6-digit code").fill(code))
        yield* step(() => page.keyboard.press("Enter"))
        yield* step(() => page.waitForURL(link))
        assert.strictEqual(yield* step(() => page.locator("#organization").textContent()), "owner's organization")
        assert.strictEqual(yield* step(() => page.locator("#role").textContent()), "operator")
        yield* screenshot(page, "invitation-phone")
        yield* step(() => page.getByRole("button", { name: "Accept invitation" }).click())
        yield* step(() => page.getByText("You joined as operator.").waitFor())
        yield* screenshot(page, "invitation-accepted-phone")
        yield* step(() => page.getByRole("link", { name: "Continue to your account" }).click())
        yield* step(() => page.waitForURL(`${server.url}/`))
        assert.match(
          (yield* step(() => page.locator("#organizations").textContent()))!,
          /owner's organization \(operator\)/
        )
        // The link is used up: the page says so and offers no button.
        yield* step(() => page.goto(link))
        assert.match((yield* step(() => page.getByRole("alert").textContent()))!, /already used/)
        assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Accept invitation" }).count()), 0)
      }),
    { timeout: 90_000 }
  )

  it.scopedLive(
    "another signed-in user is told whose invitation it is; a broken link is not found",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const owner = yield* server.bootstrap("owner@example.com")
        const ownerBrowser = yield* signIn(server, "owner@example.com")
        const { token } = yield* invite(server, ownerBrowser, owner.organization_id, "bob@example.com", "member")
        const { context, page } = yield* newPage()
        // The owner's session cookies, in the browser.
        yield* step(() =>
          context.addCookies([...ownerBrowser.jar.cookies].map(([name, value]) => ({ name, value, url: server.url })))
        )
        yield* step(() => page.goto(`${server.url}/invitations/accept?token=${token}`))
        assert.match(
          (yield* step(() => page.getByRole("alert").textContent()))!,
          /for bob@example\.com, but you are signed\s+in as owner@example\.com/
        )
        yield* screenshot(page, "invitation-other-user")
        const broken = yield* step(() => page.goto(`${server.url}/invitations/accept?token=${token.slice(0, 10)}`))
        assert.strictEqual(broken!.status(), 404)
        assert.match((yield* step(() => page.getByRole("alert").textContent()))!, /not\s+valid/)
      }),
    { timeout: 90_000 }
  )
})
