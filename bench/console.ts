/**
 * The console's weight and speed (issue 35, item 4): the script a first page loads, gzipped, with and
 * without the terminal's chunk; and the first page interactive in Chromium from a cold cache (a fresh
 * browser context per round): navigation start to the machines view rendered with its "New machine"
 * button, on `svc serve` as `npm start` runs it (bench/support.ts), signed in by e-mail code.
 * Baseline, same run: the sign-in page (the console's pages chunk, no API call) interactive the same way.
 *
 *   node --import tsx bench/console.ts [rounds=15]
 */
import * as NodeZlib from "node:zlib"
import { chromium } from "playwright-core"
import { buildConsole } from "../console/build.mjs"
import { serve, sessionCookies } from "./support.js"

const rounds = Number(process.argv[2] ?? 15)
const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`
const gz = (text: string) => NodeZlib.gzipSync(text, { level: 9 }).length

// The weight: the entry and the chunks it imports statically; the terminal is what it imports dynamically.
const built = await buildConsole()
const initial = new Set<string>()
const visit = (name: string) => {
  if (initial.has(name)) return
  initial.add(name)
  for (const [, imported] of built.files[name]!.text.matchAll(/(?:from|import)\s*"\.\/([\w-]+\.js)"/g)) visit(imported!)
}
visit(built.script)
const sum = (names: Iterable<string>, size: (text: string) => number) =>
  [...names].reduce((total, name) => total + size(built.files[name]!.text), 0)
const lazy = Object.keys(built.files).filter((name) => name.endsWith(".js") && !initial.has(name))
console.log(
  `first page script: ${kb(sum(initial, (text) => text.length))} (${
    kb(sum(initial, gz))
  } gzipped) in ${initial.size} files`
)
if (built.style !== undefined) {
  console.log(
    `stylesheet: ${kb(built.files[built.style]!.text.length)} (${kb(gz(built.files[built.style]!.text))} gzipped)`
  )
}
console.log(`terminal, loaded on demand: ${kb(sum(lazy, (text) => text.length))} (${kb(sum(lazy, gz))} gzipped)`)

const served = await serve()
try {
  const cookies = await sessionCookies(served, "bench@example.com")
  const browser = await chromium.launch({
    executablePath: process.env.SVC_TEST_CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
  })
  const interactive = async (path: string, ready: string, signedIn: boolean) => {
    const context = await browser.newContext()
    if (signedIn) await context.addCookies(cookies)
    const page = await context.newPage()
    await page.goto(`${served.url}${path}`, { waitUntil: "commit" })
    // performance.now() counts from the navigation's start; read once the control is there (an upper
    // bound by the wait's own polling). waitForFunction would evaluate a string: the CSP forbids that.
    await page.waitForSelector(ready, { timeout: 30_000 })
    const ms = (await page.evaluate("performance.now()")) as number
    await context.close()
    return ms
  }
  const consoleTimes: Array<number> = []
  const signInTimes: Array<number> = []
  await interactive("/", "button[aria-expanded]", true) // the server's first build of gzip caches
  for (let round = 0; round < rounds; round++) {
    consoleTimes.push(await interactive("/", "button[aria-expanded]", true))
    signInTimes.push(await interactive("/sign-in", "form button", false))
  }
  await browser.close()
  console.log(
    `console interactive, cold cache: median ${median(consoleTimes).toFixed(0)} ms, max ${
      Math.max(...consoleTimes).toFixed(0)
    } ms (${rounds} rounds)`
  )
  console.log(
    `baseline, sign-in page: median ${median(signInTimes).toFixed(0)} ms, max ${Math.max(...signInTimes).toFixed(0)} ms`
  )
} finally {
  await served.stop()
}
