/**
 * The console's organization pages in real Chromium: environments (values written, never shown
 * back; a change is a new version), the member's alert preferences, ownership handed to another
 * member, and the new owner deleting the organization (signed in moments ago: the recent sign-in
 * rule holds).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import { cheapPrices } from "../billing/support.js"
import { newPage, screenshot, step, unlabelledFields } from "../support/Browser.js"
import { joined } from "../support/Members.js"
import { signIn } from "../support/SignIn.js"
import { startStripeServer, stripeSettings } from "../support/StripeServer.js"
import { startServer } from "../support/TestServer.js"

describe("console: organization", () => {
  it.scopedLive(
    "environments, alerts, ownership transfer and the organization's deletion",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({
          secretKeys: { kind: "given", keys: [Redacted.make(NodeCrypto.randomBytes(32))] }
        })
        const owner = yield* signIn(server, "founder@example.com")
        const me = (yield* owner.http("GET", "/v1/me")).body
        const organization = me.organizations[0].id as string
        const name = me.organizations[0].name as string
        const heir = yield* joined(server, owner, organization, "heir@example.com", "admin")
        const { context, page } = yield* newPage()
        page.on("dialog", (dialog) => void dialog.accept())
        yield* step(() =>
          context.addCookies([...owner.jar.cookies].map(([name, value]) => ({ name, value, url: server.url })))
        )

        // Environments: the values go in and never come back; a change is a new version.
        yield* step(() => page.goto(`${server.url}/#/o/${organization}/environments`))
        yield* step(() => page.getByText("No environments.").waitFor())
        yield* step(() => page.getByRole("button", { name: "New environment" }).click())
        assert.deepStrictEqual(yield* unlabelledFields(page), [])
        yield* step(() => page.getByLabel("Name", { exact: true }).fill("keys"))
        yield* step(() =>
          page.getByLabel("Variables (one NAME=value a line)").fill("API_TOKEN=very-secret-value\nREGION=eu")
        )
        yield* step(() => page.getByRole("button", { name: "Create environment" }).click())
        const row = page.getByRole("row", { name: "keys" })
        yield* step(() => row.getByText("API_TOKEN, REGION").waitFor())
        yield* step(() => row.getByRole("button", { name: "Change variables" }).click())
        yield* step(() => page.getByLabel("Set (NAME=value) or remove (-NAME), one a line").fill("-REGION\nOTHER=x"))
        yield* step(() => page.getByRole("button", { name: "Save a new version" }).click())
        yield* step(() => page.getByText("Version 2 saved.").waitFor())
        yield* step(() => row.getByText("API_TOKEN, OTHER").waitFor())
        assert.notInclude(yield* step(() => page.content()), "very-secret-value")
        yield* screenshot(page, "console-environments")

        // Settings: the member's alerts, saved.
        yield* step(() => page.getByRole("link", { name: "Settings", exact: true }).click())
        yield* step(() => page.getByRole("heading", { name: "E-mail alerts" }).waitFor())
        yield* step(() => page.getByRole("button", { name: "Save alerts" }).click())
        yield* step(() => page.getByText("Alert preferences saved.").waitFor())
        assert.deepStrictEqual(yield* unlabelledFields(page), [])
        yield* screenshot(page, "console-settings")

        // Homelab: no billing, the usage over time.
        yield* step(() => page.getByRole("link", { name: "Billing", exact: true }).click())
        yield* step(() => page.getByRole("img", { name: /Usage over the last 14 days/ }).waitFor())
        assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Buy credit" }).count()), 0)
        yield* step(() => page.getByRole("link", { name: "Settings", exact: true }).click())

        // Ownership goes to the heir; the founder, now an admin, sees no owner controls.
        yield* step(() => page.getByLabel("New owner").selectOption({ label: "heir@example.com (admin)" }))
        yield* step(() => page.getByRole("button", { name: "Transfer ownership" }).click())
        yield* step(() => page.getByRole("heading", { name: "E-mail alerts" }).waitFor())
        yield* step(() => page.locator("#organizations option", { hasText: "(admin)" }).waitFor({ state: "attached" }))
        assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Delete organization" }).count()), 0)

        // The heir deletes it from their own browser, after naming it.
        const second = yield* newPage({ phone: true })
        yield* step(() =>
          second.context.addCookies(
            [...heir.browser.jar.cookies].map(([name, value]) => ({ name, value, url: server.url }))
          )
        )
        yield* step(() => second.page.goto(`${server.url}/#/o/${organization}/settings`))
        yield* step(() => second.page.getByLabel("Type the organization's name to confirm").fill("not it"))
        yield* step(() => second.page.getByRole("button", { name: "Delete organization" }).click())
        yield* step(() => second.page.getByText(`Type “${name}” to delete it.`).waitFor())
        yield* step(() => second.page.getByLabel("Type the organization's name to confirm").fill(name))
        yield* step(() => second.page.getByRole("button", { name: "Delete organization" }).click())
        yield* step(() => second.page.waitForURL(/#\/$/))
        const gone = yield* owner.http("GET", "/v1/me")
        assert.isFalse(gone.body.organizations.some((entry: any) => entry.id === organization))
      }),
    { timeout: 120_000 }
  )

  it.scopedLive(
    "metered billing: balances, usage chart, invoice preview, auto-refill and checkout at the provider",
    () =>
      Effect.gen(function*() {
        const stripe = yield* startStripeServer
        const server = yield* startServer({
          billing: "metered",
          prices: cheapPrices({ trial: { total_micros: 5_000_000 } }),
          stripe: stripeSettings(stripe),
          payments: Option.some("stripe" as const)
        })
        const owner = yield* signIn(server, "payer@example.com")
        const organization = (yield* owner.http("GET", "/v1/me")).body.organizations[0].id as string
        const { context, page } = yield* newPage({ dark: true })
        yield* step(() =>
          context.addCookies([...owner.jar.cookies].map(([name, value]) => ({ name, value, url: server.url })))
        )
        // The provider's checkout page stands in here; the console only navigates to it.
        yield* step(() =>
          page.route("https://checkout.stripe.test/**", (route) => route.fulfill({ body: "the provider's checkout" }))
        )
        yield* step(() => page.goto(`${server.url}/#/o/${organization}/billing`))
        const balances = page.getByRole("definition").filter({ hasText: "$5.00" })
        yield* step(() => balances.first().waitFor())
        yield* step(() => page.getByRole("img", { name: /Usage over the last 14 days/ }).waitFor())
        yield* step(() => page.getByRole("heading", { name: "Invoice preview" }).waitFor())
        assert.deepStrictEqual(yield* unlabelledFields(page), [])

        yield* step(() => page.getByLabel("Packs of $20 each time").fill("2"))
        yield* step(() => page.getByLabel("When credit falls below ($)").fill("5"))
        yield* step(() => page.getByLabel("At most a month ($)").fill("100"))
        yield* step(() => page.getByRole("button", { name: "Save auto-refill" }).click())
        yield* step(() => page.getByText("Auto-refill saved.").waitFor())
        yield* screenshot(page, "console-billing-dark")

        yield* step(() => page.getByLabel("Credit packs ($20 each)").fill("2"))
        yield* step(() => page.getByRole("button", { name: "Buy credit" }).click())
        yield* step(() => page.waitForURL(/^https:\/\/checkout\.stripe\.test\//))
        const session = stripe.requests.find((made) => made.path === "/v1/checkout/sessions")!.body
        assert.strictEqual(session.metadata.credit_packs, "2")
      }),
    { timeout: 120_000 }
  )

  it.scopedLive(
    "a list of 1,000 machines reads a page at a time with the API's cursors, by keyboard too",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const owner = yield* signIn(server, "many@example.com")
        const organization = (yield* owner.http("GET", "/v1/me")).body.organizations[0].id as string
        const { context, page } = yield* newPage()
        yield* step(() =>
          context.addCookies([...owner.jar.cookies].map(([name, value]) => ({ name, value, url: server.url })))
        )
        // 1,000 machines, answered by the browser's stand-in for svc's list route (making 1,000 real
        // sandboxes would take the test's whole budget); every other call reaches svc.
        const names = Array.from({ length: 1_000 }, (_, i) => `m-${String(i).padStart(4, "0")}`)
        const asked: Array<string> = []
        yield* step(() =>
          page.route(/\/v1\/machines\?/, (route) => {
            const url = new URL(route.request().url())
            asked.push(url.search)
            const limit = Number(url.searchParams.get("limit"))
            const start = Number(url.searchParams.get("cursor") ?? 0)
            const items = names.slice(start, start + limit).map((name, i) => ({
              id: `00000000-0000-4000-8000-${String(start + i).padStart(12, "0")}`,
              name,
              state: "stopped",
              size: "small",
              image: "debian"
            }))
            const next = start + limit < names.length ? String(start + limit) : null
            return route.fulfill({ json: { items, next_cursor: next } })
          })
        )
        yield* step(() => page.goto(`${server.url}/#/o/${organization}/machines`))
        yield* step(() => page.getByRole("row", { name: "m-0049" }).waitFor())
        assert.strictEqual(yield* step(() => page.getByRole("row", { name: /^m-/ }).count()), 50)
        yield* step(() => page.getByRole("button", { name: "Next page" }).click())
        yield* step(() => page.getByRole("row", { name: "m-0050" }).waitFor())
        assert.strictEqual(yield* step(() => page.getByRole("row", { name: "m-0049" }).count()), 0)
        // By keyboard: the focused button pressed with Enter.
        yield* step(() => page.getByRole("button", { name: "Next page" }).focus())
        yield* step(() => page.keyboard.press("Enter"))
        yield* step(() => page.getByRole("row", { name: "m-0100" }).waitFor())
        yield* step(() => page.getByRole("button", { name: "Previous page" }).click())
        yield* step(() => page.getByRole("row", { name: "m-0050" }).waitFor())
        assert.isTrue(asked.every((search) => search.includes("limit=50")))
      }),
    { timeout: 60_000 }
  )
})
