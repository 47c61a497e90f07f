/**
 * The screenshots of docs/console.md, taken from a real `svc serve` (bench/support.ts: the bundle as
 * `npm start` runs it) in Chromium: a few machines, a key, an environment and a webhook made through
 * the API, then each page of the console as its owner sees it. Small PNGs (1024x640, one device
 * pixel per CSS pixel) into docs/console/.
 *
 *   node --import tsx bench/console-screenshots.ts
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { chromium, type Page } from "playwright-core"
import { createMachine, httpClient, serve, sessionCookies, settled } from "./support.js"

const out = NodePath.resolve("docs/console")
NodeFs.mkdirSync(out, { recursive: true })

const served = await serve()
const browser = await chromium.launch({
  executablePath: process.env.SVC_TEST_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
})
try {
  const api = httpClient(served, 4)
  // What the pages show: machines (one left stopped), a key, an environment, a webhook.
  const made = await Promise.all(["web", "worker", "db"].map((name) => createMachine(api, name)))
  for (const machine of made) await settled(api, machine.operation_id, 200)
  const stopped = await api.call("POST", `/v1/machines/${made[2]!.machine_id}/stop`, {})
  await settled(api, stopped.body.operation_id, 200)
  await api.call("POST", "/v1/api-keys", { name: "ci", preset: "use_existing" })
  await api.call("POST", "/v1/environments", { name: "staging", variables: { DATABASE_URL: "postgres://db" } })
  await api.call("POST", "/v1/webhooks", {
    name: "deploys",
    url: "https://hooks.example.com/svc",
    events: ["machine.running"]
  })
  const me = await api.call("GET", "/v1/me")
  const organization = me.body.active_organization_id as string
  const cookies = await sessionCookies(served, "bench@example.com")

  const context = await browser.newContext({ viewport: { width: 1024, height: 640 }, colorScheme: "light" })
  const page = await context.newPage()
  const shot = async (name: string, ready: (page: Page) => Promise<unknown>) => {
    await ready(page)
    await page.screenshot({ path: NodePath.join(out, `${name}.png`) })
    console.log(`docs/console/${name}.png`)
  }
  const view = (path: string) => page.goto(`${served.url}/#/o/${organization}/${path}`)

  await page.goto(`${served.url}/sign-in`)
  await shot("sign-in", () => page.getByRole("button", { name: "Email me a code" }).waitFor())
  await context.addCookies(cookies)

  await view("machines")
  await shot("machines", () => page.getByText("worker", { exact: true }).first().waitFor())
  await page.getByRole("button", { name: "New machine" }).click()
  await shot("new-machine", () => page.getByLabel("Template", { exact: true }).waitFor())
  await view(`machines/${made[0]!.machine_id}`)
  await shot("machine", () => page.getByRole("heading", { name: "web" }).waitFor())
  await view(`machines/${made[0]!.machine_id}/terminal`)
  await shot("terminal", async () => {
    await page.getByText("Connected", { exact: true }).waitFor()
    await page.keyboard.type("ls -la --color / | head\n")
    await page.waitForTimeout(1500) // the prompt and the listing drawn: a picture, not a test
  })
  for (const [name, ready] of [["keys", "ci"], ["members", "bench@example.com"], ["environments", "staging"]]) {
    await view(name!)
    await shot(name!, () => page.getByText(ready!, { exact: true }).first().waitFor())
  }
  await view("webhooks")
  await shot("webhooks", () => page.getByRole("button", { name: "New webhook" }).waitFor())
  await view("billing")
  await shot("billing", () => page.locator("figure.chart svg").waitFor())
  await view("settings")
  await shot("settings", () => page.getByRole("button", { name: "Save alerts" }).waitFor())
  await page.goto(`${served.url}/account`)
  await shot("account", () => page.getByRole("button", { name: "Sign out" }).waitFor())
  const device = await fetch(`${served.url}/v1/auth/device/code`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: "laptop" })
  }).then((response) => response.json() as Promise<{ verification_uri_complete: string }>)
  await page.goto(device.verification_uri_complete)
  await shot("device", () => page.getByRole("button", { name: "Approve" }).waitFor())

  await page.emulateMedia({ colorScheme: "dark" })
  await view("machines")
  await shot("machines-dark", () => page.getByText("worker", { exact: true }).first().waitFor())
  await context.close()
  await api.close()
} finally {
  await browser.close()
  await served.stop()
}
