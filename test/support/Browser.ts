/**
 * A real browser for the page tests: Debian's chromium driven by playwright-core, closed with the
 * test's scope. `screenshot` saves a page into test-results/ (gitignored) for a person to look at.
 */
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { chromium, type Page } from "playwright-core"

export const resultsDir = NodePath.resolve("test-results")

export const browser = Effect.acquireRelease(
  Effect.promise(() =>
    chromium.launch({
      executablePath: process.env.SVC_TEST_CHROMIUM ?? "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync"
      ]
    })
  ),
  (launched) => Effect.promise(() => launched.close())
)

/** A fresh browser context (its own cookies) and a page in it, phone-sized when asked. */
export const newPage = (options: { readonly phone?: boolean } = {}) =>
  Effect.gen(function*() {
    const launched = yield* browser
    const context = yield* Effect.promise(() =>
      launched.newContext(options.phone === true ? { viewport: { width: 390, height: 844 }, isMobile: true } : {})
    )
    const page = yield* Effect.promise(() => context.newPage())
    page.setDefaultTimeout(15_000)
    return { context, page }
  })

/** Runs one browser step (a playwright promise) as an Effect. */
export const step = <A>(run: () => Promise<A>) => Effect.promise(run)

export const screenshot = (page: Page, name: string) =>
  Effect.promise(async () => {
    NodeFs.mkdirSync(resultsDir, { recursive: true })
    await page.screenshot({ path: NodePath.join(resultsDir, `${name}.png`), fullPage: true })
  })
