/**
 * The console (console/, served at `{ui_url}/`) in real Chromium: a person signs in by e-mail,
 * creates a machine with the "New machine" form, follows it to running, reloads its page (the
 * place is in the URL), opens the browser terminal and reads back a command's output; no request
 * leaves svc and the CSP refuses nothing the console does. A member sees the machines but no
 * Delete, Stop or "New machine" (the server refuses them anyway: test/api covers the roles).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import type { BrowserContext, Page } from "playwright-core"
import { newPage, screenshot, step, unlabelledFields } from "../support/Browser.js"
import { request } from "../support/Http.js"
import { joined } from "../support/Members.js"
import { httpReceiver } from "../support/Receivers.js"
import { codeFrom, latestMailTo, signIn } from "../support/SignIn.js"
import { startServer, type TestServer } from "../support/TestServer.js"

/** Every request the page makes, and what the browser's console says (CSP refusals show there). */
const watch = (page: Page) => {
  const requests: Array<string> = []
  const complaints: Array<string> = []
  page.on("request", (made) => void requests.push(made.url()))
  // A failed load is counted from its response below (the browser's own favicon probe of the older
  // pages is none of the page's requests).
  page.on("console", (message) => {
    const text = message.text()
    if (
      (message.type() === "error" && !text.startsWith("Failed to load resource")) ||
      /Content Security Policy/i.test(text)
    ) {
      complaints.push(text)
    }
  })
  page.on("pageerror", (error) => void complaints.push(String(error)))
  page.on("response", (response) => {
    if (response.status() >= 400) complaints.push(`${response.status()} ${response.url()}`)
  })
  return { requests, complaints }
}

/** A browser context signed in with the cookies of an HTTP sign-in (test/support/SignIn.ts). */
const useCookies = (context: BrowserContext, server: TestServer, cookies: ReadonlyMap<string, string>) =>
  step(() => context.addCookies([...cookies].map(([name, value]) => ({ name, value, url: server.url }))))

describe("console", () => {
  it.scopedLive(
    "from e-mail sign-in to a running machine made in the console, and a command typed in its terminal",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const { page } = yield* newPage()
        const seen = watch(page)
        yield* step(() => page.goto(`${server.url}/`))
        assert.strictEqual(new URL(page.url()).pathname, "/sign-in")
        yield* step(() => page.getByLabel("Email address", { exact: true }).fill("ada@example.com"))
        yield* step(() => page.getByRole("button", { name: "Email me a code" }).click())
        yield* step(() => page.getByLabel("6-digit code").waitFor())
        const code = codeFrom((yield* latestMailTo(server, "ada@example.com")).text)!
        yield* step(() => page.getByLabel("6-digit code").fill(code))
        yield* step(() => page.keyboard.press("Enter"))
        yield* step(() => page.waitForURL(`${server.url}/`))

        // The empty state says what to do next; the form's fields are labelled.
        yield* step(() => page.getByText("No machines yet").waitFor())
        yield* screenshot(page, "console-machines-empty")
        yield* step(() => page.getByRole("button", { name: "New machine" }).click())
        assert.deepStrictEqual(yield* unlabelledFields(page), [])
        yield* step(() => page.getByLabel("Name", { exact: true }).fill("web"))
        yield* step(() => page.getByLabel("Size", { exact: true }).selectOption("small"))
        yield* step(() => page.getByLabel("Template", { exact: true }).waitFor())
        yield* screenshot(page, "console-new-machine")
        yield* step(() => page.getByRole("button", { name: "Create machine" }).click())

        // The machine's page: linked by its URL, followed to running.
        yield* step(() => page.waitForURL(/#\/o\/[0-9a-f-]+\/machines\/[0-9a-f-]+$/))
        yield* step(() => page.getByRole("heading", { name: "web" }).waitFor())
        yield* step(() => page.locator(".badge", { hasText: /^running$/ }).waitFor({ timeout: 90_000 }))
        const machineUrl = page.url()
        yield* step(() => page.reload())
        yield* step(() => page.getByRole("heading", { name: "web" }).waitFor())
        assert.strictEqual(page.url(), machineUrl)
        for (const name of ["Stop", "Delete", "Fork", "Snapshot", "Restart"]) {
          assert.strictEqual(yield* step(() => page.getByRole("button", { name, exact: true }).count()), 1, name)
        }
        yield* screenshot(page, "console-machine")

        // A command's output as it comes (the operation's event stream), then its exit code.
        yield* step(() =>
          page.getByLabel("Command", { exact: true }).fill("for i in 1 2 3; do echo tick-$i; sleep 0.2; done")
        )
        yield* step(() => page.getByRole("button", { name: "Run", exact: true }).click())
        yield* step(() => page.getByLabel("Output").getByText(/tick-3/).waitFor({ timeout: 60_000 }))
        yield* step(() => page.getByText("Exit code 0").waitFor({ timeout: 60_000 }))
        // A private port, and a token that opens it without signing in.
        yield* step(() => page.getByLabel("Port", { exact: true }).fill("8080"))
        yield* step(() => page.getByRole("button", { name: "Expose", exact: true }).click())
        yield* step(() => page.getByRole("button", { name: "Token for port 8080" }).click({ timeout: 60_000 }))
        assert.match((yield* step(() => page.locator(".secret code").textContent()))!, /^https?:\/\//)

        // The terminal: xterm.js, loaded on demand, on the terminal WebSocket.
        const scriptsBefore = seen.requests.filter((url) => url.endsWith(".js")).length
        yield* step(() => page.getByRole("link", { name: "Terminal", exact: true }).first().click())
        yield* step(() => page.getByText("Connected", { exact: true }).waitFor({ timeout: 60_000 }))
        assert.isAbove(seen.requests.filter((url) => url.endsWith(".js")).length, scriptsBefore)
        yield* step(() => page.locator(".xterm-rows", { hasText: /[#$]/ }).waitFor({ timeout: 30_000 }))
        yield* step(() => page.locator(".terminal-box").click())
        yield* step(() => page.keyboard.type("echo console-$((6*7))\n"))
        yield* step(() => page.locator(".xterm-rows", { hasText: "console-42" }).waitFor({ timeout: 30_000 }))
        yield* screenshot(page, "console-terminal")

        // Back in the list, the machine's row names it and holds its controls.
        yield* step(() => page.getByRole("link", { name: "Machines", exact: true }).click())
        const row = page.getByRole("row", { name: "web" })
        yield* step(() => row.getByRole("button", { name: "Stop" }).waitFor())
        assert.strictEqual(yield* step(() => row.getByRole("button", { name: "Delete" }).count()), 1)

        const origin = new URL(server.url).origin
        const elsewhere = seen.requests.filter((url) => !url.startsWith(origin) && !url.startsWith("ws://127.0.0.1:"))
        assert.deepStrictEqual(elsewhere, [])
        assert.deepStrictEqual(seen.complaints, [])
      }),
    { timeout: 180_000 }
  )

  it.scopedLive("a member sees the machines but no Delete, Stop or New machine", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* signIn(server, "owner@example.com")
      const organization = (yield* owner.http("GET", "/v1/me")).body.organizations[0].id as string
      const created = yield* owner.http("POST", "/v1/machines", {
        headers: { ...owner.withCsrf, "x-organization-id": organization },
        json: { name: "shared", start: false }
      })
      assert.strictEqual(created.status, 202, created.text)
      const member = yield* joined(server, owner, organization, "member@example.com", "member")
      const { context, page } = yield* newPage({ dark: true })
      yield* useCookies(context, server, member.browser.jar.cookies)
      yield* step(() => page.goto(`${server.url}/#/o/${organization}/machines`))
      const row = page.getByRole("row", { name: "shared" })
      yield* step(() => row.waitFor())
      yield* screenshot(page, "console-member-dark")
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Delete" }).count()), 0)
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Start" }).count()), 0)
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "New machine" }).count()), 0)
      yield* step(() => row.getByRole("link", { name: "shared" }).click())
      yield* step(() => page.getByRole("heading", { name: "shared" }).waitFor())
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Delete" }).count()), 0)
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Snapshot" }).count()), 0)
      // Settings: their own alerts, no transfer or deletion; environments they may keep.
      yield* step(() => page.getByRole("link", { name: "Settings", exact: true }).click())
      yield* step(() => page.getByRole("heading", { name: "E-mail alerts" }).waitFor())
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Delete organization" }).count()), 0)
      assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Transfer ownership" }).count()), 0)
    }), { timeout: 120_000 })

  it.scopedLive(
    "serves its files hashed and cached, gzipped when asked, under a CSP without inline scripts",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const owner = yield* signIn(server, "csp@example.com")
        const document = yield* request(server.url, "GET", "/", { headers: { cookie: owner.jar.header() } })
        assert.strictEqual(document.status, 200)
        const csp = document.headers.get("content-security-policy")!
        assert.match(csp, /default-src 'none'/)
        assert.match(csp, /script-src 'self'(;|$)/)
        assert.notMatch(csp, /unsafe-inline|unsafe-eval/)
        assert.notMatch(document.text, /<script(?![^>]*\bsrc=)[^>]*>/)
        const script = /<script type="module" src="([^"]+)"/.exec(document.text)![1]!
        const plain = yield* request(server.url, "GET", script)
        assert.strictEqual(plain.status, 200)
        assert.match(plain.headers.get("content-type")!, /^text\/javascript/)
        assert.match(plain.headers.get("cache-control")!, /immutable/)
        const zipped = yield* request(server.url, "GET", script, { headers: { "accept-encoding": "gzip" } })
        assert.strictEqual(zipped.headers.get("content-encoding"), "gzip")
        assert.strictEqual((yield* request(server.url, "GET", "/assets/nothing.js")).status, 404)
        assert.strictEqual((yield* request(server.url, "GET", "/assets/..%2Fpackage.json")).status, 404)
        // Signed out, `/` sends to sign-in (no console document, no user data).
        const signedOut = yield* request(server.url, "GET", "/")
        assert.strictEqual(signedOut.status, 303)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "an owner creates a webhook (its secret shown once) and sees its first delivery",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({
          secretKeys: { kind: "given", keys: [Redacted.make(NodeCrypto.randomBytes(32))] }
        })
        const owner = yield* signIn(server, "hooks@example.com")
        const organization = (yield* owner.http("GET", "/v1/me")).body.organizations[0].id as string
        const receiver = yield* httpReceiver()
        const { context, page } = yield* newPage()
        yield* useCookies(context, server, owner.jar.cookies)
        yield* step(() => page.goto(`${server.url}/#/o/${organization}/webhooks`))
        yield* step(() => page.getByText("No webhooks.").waitFor())
        yield* step(() => page.getByRole("button", { name: "New webhook" }).click())
        assert.deepStrictEqual(yield* unlabelledFields(page), [])
        yield* step(() => page.getByLabel("Name", { exact: true }).fill("ci"))
        yield* step(() => page.getByLabel("URL", { exact: true }).fill(receiver.url))
        yield* step(() => page.getByRole("button", { name: "Create webhook" }).click())
        const secret = yield* step(() => page.locator(".secret code").textContent())
        assert.match(secret!, /^whsec_/)
        const created = yield* owner.http("POST", "/v1/machines", {
          headers: { ...owner.withCsrf, "x-organization-id": organization },
          json: { name: "hooked", start: false }
        })
        assert.strictEqual(created.status, 202, created.text)
        const card = page.getByRole("article", { name: "ci" })
        yield* step(() => card.getByRole("button", { name: "Deliveries" }).click())
        yield* step(() => card.getByText(/machine\.created succeeded/).waitFor({ timeout: 60_000 }))
        yield* screenshot(page, "console-webhooks")
        // Reloaded, the secret is gone: it was shown once.
        yield* step(() => page.reload())
        yield* step(() => card.waitFor())
        assert.strictEqual(yield* step(() => page.locator(".secret").count()), 0)
      }),
    { timeout: 120_000 }
  )

  it.scopedLive(
    "an owner invites in the console; the invitee accepts in a second browser and sees the organization",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const owner = yield* signIn(server, "boss@example.com")
        const organization = (yield* owner.http("GET", "/v1/me")).body.organizations[0].id as string
        const first = yield* newPage()
        yield* useCookies(first.context, server, owner.jar.cookies)
        yield* step(() => first.page.goto(`${server.url}/#/o/${organization}/members`))
        yield* step(() => first.page.getByLabel("Email address", { exact: true }).fill("grace@example.com"))
        yield* step(() => first.page.getByLabel("Role", { exact: true }).selectOption("operator"))
        yield* step(() => first.page.getByRole("button", { name: "Invite", exact: true }).click())
        yield* step(() =>
          first.page.getByRole("list", { name: "Open invitations" }).getByText("grace@example.com").waitFor()
        )
        yield* screenshot(first.page, "console-members")
        const link = /(http:\/\/\S+\/invitations\/accept\?token=\S+)/.exec(
          (yield* latestMailTo(server, "grace@example.com")).text
        )![1]!

        // The invitee, in a browser of their own: signs in on the way, accepts, and lands in the console.
        const second = yield* newPage({ phone: true })
        yield* step(() => second.page.goto(link))
        yield* step(() => second.page.getByLabel("Email address", { exact: true }).fill("grace@example.com"))
        yield* step(() => second.page.getByRole("button", { name: "Email me a code" }).click())
        yield* step(() => second.page.getByLabel("6-digit code").waitFor())
        const code = codeFrom((yield* latestMailTo(server, "grace@example.com")).text)!
        yield* step(() => second.page.getByLabel("6-digit code").fill(code))
        yield* step(() => second.page.keyboard.press("Enter"))
        yield* step(() => second.page.waitForURL(link))
        yield* step(() => second.page.getByRole("button", { name: "Accept invitation" }).click())
        yield* step(() => second.page.getByRole("link", { name: "Continue to your account" }).click())
        yield* step(() => second.page.waitForURL(`${server.url}/`))
        yield* step(() => second.page.goto(`${server.url}/#/o/${organization}/machines`))
        yield* step(() => second.page.getByText("No machines yet").waitFor())
        assert.match((yield* step(() => second.page.locator("#organizations").textContent()))!, /\(operator\)/)
        // An operator may create machines, not manage members.
        assert.strictEqual(yield* step(() => second.page.getByRole("button", { name: "New machine" }).count()), 1)
        yield* step(() => second.page.goto(`${server.url}/#/o/${organization}/members`))
        yield* step(() => second.page.getByRole("row", { name: "grace@example.com" }).waitFor())
        assert.strictEqual(yield* step(() => second.page.getByRole("button", { name: "Invite" }).count()), 0)

        // And the owner's console lists the new member.
        yield* step(() => first.page.reload())
        yield* step(() => first.page.getByRole("row", { name: "grace@example.com" }).waitFor())
      }),
    { timeout: 120_000 }
  )

  it.scopedLive(
    "a snapshot taken in the console, saved as a template, offered to new machines",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const owner = yield* signIn(server, "snap@example.com")
        const organization = (yield* owner.http("GET", "/v1/me")).body.organizations[0].id as string
        const created = yield* owner.http("POST", "/v1/machines", {
          headers: { ...owner.withCsrf, "x-organization-id": organization },
          json: { name: "base", start: false }
        })
        assert.strictEqual(created.status, 202, created.text)
        const { context, page } = yield* newPage()
        yield* useCookies(context, server, owner.jar.cookies)
        yield* step(() => page.goto(`${server.url}/#/o/${organization}/machines/${created.body.machine_id}/snapshots`))
        yield* step(() => page.locator(".badge", { hasText: /^stopped$/ }).waitFor({ timeout: 90_000 }))
        yield* step(() => page.getByRole("button", { name: "Snapshot", exact: true }).click())
        yield* step(() => page.getByRole("cell", { name: "ready", exact: true }).waitFor({ timeout: 90_000 }))
        yield* step(() => page.getByLabel("Template name").fill("golden"))
        yield* step(() => page.getByRole("button", { name: "Save as template" }).click())
        yield* step(() => page.getByRole("link", { name: "Templates", exact: true }).click())
        yield* step(() => page.getByRole("row", { name: "golden" }).waitFor({ timeout: 90_000 }))
        yield* screenshot(page, "console-templates")
        yield* step(() => page.getByRole("link", { name: "Machines", exact: true }).click())
        yield* step(() => page.getByRole("button", { name: "New machine" }).click())
        yield* step(() =>
          page.getByLabel("Template", { exact: true }).locator("option", { hasText: "golden" }).waitFor({
            state: "attached"
          })
        )
      }),
    { timeout: 180_000 }
  )
})
