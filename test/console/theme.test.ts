/**
 * The light/dark theme in real Chromium: the system's by default, a choice in the "Theme" field
 * wins over it, is remembered across a reload and in the console's other pages, and "System theme"
 * gives the choice back to the system.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { newPage, screenshot, step } from "../support/Browser.js"
import { signIn } from "../support/SignIn.js"
import { startServer } from "../support/TestServer.js"

/** style.css's page backgrounds. */
const darkBackground = "rgb(18, 21, 26)"
const lightBackground = "rgb(246, 247, 249)"

/** Waits until the page is drawn with the given background (a theme applies without a request). */
const drawnWith = (page: Page, background: string) =>
  step(() =>
    // Evaluated in the page (the tests are compiled without the DOM's types).
    page.waitForFunction(`getComputedStyle(document.body).backgroundColor === ${JSON.stringify(background)}`, null, {
      timeout: 30_000
    })
  )

describe("console theme", () => {
  it.scopedLive(
    "follows the system until a theme is chosen, remembers the choice, and can follow it again",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const { context, page } = yield* newPage({ dark: true })
        yield* step(() => page.goto(`${server.url}/sign-in`))
        const theme = page.getByRole("combobox", { name: "Theme", exact: true })
        assert.strictEqual(yield* step(() => theme.inputValue()), "system")
        yield* drawnWith(page, darkBackground)

        yield* step(() => theme.selectOption({ label: "Light theme" }))
        yield* drawnWith(page, lightBackground)
        yield* step(() => page.reload())
        assert.strictEqual(yield* step(() => page.getByRole("combobox", { name: "Theme" }).inputValue()), "light")
        yield* drawnWith(page, lightBackground)

        // The console itself, signed in: the same choice, and the same field in its header.
        const jar = yield* signIn(server, "ada@example.com")
        yield* step(() =>
          context.addCookies([...jar.jar.cookies].map(([name, value]) => ({ name, value, url: server.url })))
        )
        yield* step(() => page.goto(`${server.url}/`))
        yield* step(() => page.getByText("No machines yet").waitFor())
        assert.strictEqual(yield* step(() => page.getByRole("combobox", { name: "Theme" }).inputValue()), "light")
        yield* drawnWith(page, lightBackground)
        yield* step(() => page.getByRole("combobox", { name: "Theme" }).selectOption({ label: "Dark theme" }))
        yield* drawnWith(page, darkBackground)
        yield* screenshot(page, "console-theme-dark")

        yield* step(() => page.getByRole("combobox", { name: "Theme" }).selectOption({ label: "System theme" }))
        yield* drawnWith(page, darkBackground) // the system is dark
        assert.isNull(yield* step(() => page.evaluate("localStorage.getItem('svc-theme')")))
        yield* step(() => page.emulateMedia({ colorScheme: "light" }))
        yield* drawnWith(page, lightBackground)
      }),
    { timeout: 90_000 }
  )
})
