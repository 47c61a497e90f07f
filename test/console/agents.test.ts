/**
 * The console's agents in real Chromium: the real `claude` runs in a sandboxed machine against the
 * scripted Anthropic server (test/support/Agents.ts, as test/e2e/agents.test.ts). A person opens
 * the machine's Agents tab, starts a conversation with a prompt, reads the answer as the stream
 * brings it, steers a slow turn, interrupts a hanging one, and reads the models page.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { beforeAll } from "vitest"
import { claudeMachine, installTestAgents } from "../support/Agents.js"
import { newPage, screenshot, step, unlabelledFields } from "../support/Browser.js"
import { eventually } from "../support/Machines.js"
import { signIn } from "../support/SignIn.js"

beforeAll(() => installTestAgents(), 10 * 60_000)

describe("console: agents", () => {
  it.scopedLive(
    "a conversation prompted, answered as it streams, steered and interrupted; the models page",
    () =>
      Effect.gen(function*() {
        const { machineId, model, server } = yield* claudeMachine()
        // The bootstrapped owner signs in by e-mail, as a person would in the browser.
        const owner = yield* signIn(server, "agents@example.com")
        const organization = (yield* owner.http("GET", "/v1/me")).body.organizations[0].id as string
        const { context, page } = yield* newPage()
        yield* step(() =>
          context.addCookies([...owner.jar.cookies].map(([name, value]) => ({ name, value, url: server.url })))
        )
        const requests: Array<string> = []
        page.on("request", (made) => void requests.push(made.url()))

        yield* step(() => page.goto(`${server.url}/#/o/${organization}/machines/${machineId}/agents`))
        yield* step(() => page.getByText("No conversations yet").waitFor({ timeout: 30_000 }))
        yield* step(() => page.getByRole("link", { name: "New conversation" }).click())
        yield* step(() =>
          page.getByLabel("Agent", { exact: true }).locator("option", { hasText: "claude_code" }).waitFor({
            state: "attached"
          })
        )
        assert.deepStrictEqual(yield* unlabelledFields(page), [])
        yield* step(() => page.getByLabel("Agent", { exact: true }).selectOption("claude_code"))
        yield* step(() => page.getByLabel("Prompt", { exact: true }).fill("hello from the console"))
        yield* step(() => page.getByRole("button", { name: "Send" }).click())

        // The conversation's own URL, and the answer as the stream brings it.
        yield* step(() => page.waitForURL(/\/agents\/[0-9a-f-]{36}$/))
        const events = page.getByRole("list", { name: "Events" })
        yield* step(() => events.getByText("hello from the console", { exact: true }).waitFor())
        yield* step(() => events.getByText(/^echo: /).waitFor({ timeout: 90_000 }))
        yield* step(() => events.getByText("Turn completed.").waitFor({ timeout: 90_000 }))
        const conversationUrl = page.url()
        yield* screenshot(page, "console-agent-conversation")

        // A slow turn: the steer box replaces the prompt while it runs; the agent takes the words.
        yield* step(() => page.getByLabel("Prompt", { exact: true }).fill("SLOW"))
        yield* step(() => page.getByRole("button", { name: "Send" }).click())
        yield* step(() => page.getByLabel("Steer the running turn").fill("steered words"))
        yield* step(() => page.getByRole("button", { name: "Steer", exact: true }).click())
        yield* step(() => events.getByText("Steer accepted: steered words").waitFor({ timeout: 90_000 }))
        yield* step(() => events.getByText("Turn completed.").nth(1).waitFor({ timeout: 90_000 }))
        assert.isTrue(model.requests.some((request) => JSON.stringify(request.body).includes("steered words")))

        // A hanging turn, interrupted.
        yield* step(() => page.getByLabel("Prompt", { exact: true }).fill("HANG"))
        yield* step(() => page.getByRole("button", { name: "Send" }).click())
        yield* eventually(Effect.sync(() => model.hanging() > 0 ? true : undefined), 60_000)
        yield* step(() => page.getByRole("button", { name: "Interrupt", exact: true }).click())
        yield* step(() => events.getByText("Turn interrupted.").waitFor({ timeout: 90_000 }))
        yield* step(() => page.getByLabel("Prompt", { exact: true }).waitFor())

        // Reloaded, the conversation reads back from its URL; the list names it.
        yield* step(() => page.reload())
        assert.strictEqual(page.url(), conversationUrl)
        yield* step(() => events.getByText(/^echo: /).first().waitFor({ timeout: 30_000 }))
        yield* step(() => page.getByRole("link", { name: "← Conversations" }).click())
        yield* step(() => page.getByRole("cell", { name: "claude_code" }).waitFor())

        // The models page, for any member.
        yield* step(() =>
          page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Agents" }).click()
        )
        yield* step(() => page.getByRole("heading", { name: "claude_code" }).waitFor())
        yield* step(() => page.getByRole("table", { name: "Models of claude_code" }).waitFor())
        yield* screenshot(page, "console-agent-models")

        const origin = new URL(server.url).origin
        assert.deepStrictEqual(requests.filter((url) => !url.startsWith(origin)), [])
      }),
    { timeout: 300_000 }
  )
})
