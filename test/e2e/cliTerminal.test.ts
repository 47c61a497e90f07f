/**
 * The CLI on a real pseudo-terminal (tmux, on a socket of its own). Progress: `svc ops wait` shows
 * one line that keeps updating (spinner, status, seconds) and is replaced by the outcome, where off a
 * terminal it prints a plain line per state (test/e2e/cliMachines.test.ts). Login: the code and the
 * page are shown as a person reads them, and approving it in a session signs the terminal in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { makeClient } from "../../src/index.js"
import { cliScript } from "../support/CheckoutBundle.js"
import { signIn } from "../support/SignIn.js"
import { startServer, tempDir } from "../support/TestServer.js"

const shellQuote = (value: string) => `'${value.replace(/'/g, "'\\''")}'`

/** A detached tmux session on its own socket running `command`; answers a pane capture. */
const tmux = (command: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const socket = `svc-cli-test-${process.pid}-${Date.now()}`
      const tmuxRun = (...args: Array<string>) =>
        NodeChild.execFileSync("tmux", ["-u", "-L", socket, ...args], { encoding: "utf8" })
      tmuxRun("new-session", "-d", "-s", "cli", "-x", "150", "-y", "20", command)
      return { socket, capture: () => tmuxRun("capture-pane", "-p", "-t", "cli"), tmuxRun }
    }),
    ({ tmuxRun }) =>
      Effect.sync(() => {
        try {
          tmuxRun("kill-server")
        } catch {
          // Already gone.
        }
      })
  )

describe("svc CLI on a terminal", () => {
  it.scopedLive(
    "ops wait shows one updating progress line, then the outcome in its place",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const owner = yield* server.bootstrap("tty@example.com")
        const client = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
        const created = yield* client.machines.create({ payload: { name: "tty" } })
        yield* client.waitOperation(created)
        // The command runs until the test has seen the progress line redrawn (the CLI's start-up time varies).
        // The test writes the file into the machine's disk from the host.
        const release = NodePath.join(server.config.dataDir, "machines", created.machine_id, "disk", "workspace", "go")
        const exec = yield* client.machines.exec({
          path: { id: created.machine_id },
          payload: { shell: "while [ ! -e /workspace/go ]; do sleep 0.1; done" }
        })
        const id = exec.operation_id
        const env = `env SVC_URL=${server.url} SVC_API_KEY=${owner.api_key} XDG_CONFIG_HOME=${yield* tempDir} ` +
          "TERM=xterm-256color LANG=C.UTF-8"
        const session = yield* tmux(
          `${env} ${shellQuote(process.execPath)} ${shellQuote(cliScript())} ops wait ${id}; echo EXIT=$?; sleep 60`
        )
        // While it runs: a spinner, the status and the seconds so far, on one line.
        const running = new RegExp(`^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] exec ${id}: running \\d+\\.\\ds$`, "m")
        const frames: Array<string> = []
        const times = new Set<string>()
        const deadline = Date.now() + 90_000
        while (!frames.at(-1)?.includes("EXIT=") && Date.now() < deadline) {
          yield* Effect.sleep("150 millis")
          const frame = session.capture()
          frames.push(frame)
          const line = running.exec(frame)?.[0]
          if (line !== undefined) times.add(line.replace(/^\S+ /, ""))
          if (times.size >= 3) NodeFs.writeFileSync(release, "")
        }
        const final = frames.at(-1)!
        assert.include(final, "EXIT=0", final)
        // The line was redrawn (its seconds changed), never added to.
        assert.isAtLeast(times.size, 3, frames.join("\n---\n"))
        for (const frame of frames) {
          assert.isAtMost(frame.split("\n").filter((line) => line.includes(`exec ${id}`)).length, 2, frame)
        }
        // At the end: the outcome replaced the progress line, then the answer.
        const lines = final.split("\n").filter((line) => line.trim() !== "")
        assert.match(lines[0]!, new RegExp(`^✓ exec ${id}: succeeded in \\d+\\.\\ds$`))
        assert.strictEqual(lines[1], `exec ${id}: succeeded`)
        assert.strictEqual(lines[2], "EXIT=0")
        assert.notInclude(final, "operation exec")
      }),
    150_000
  )

  it.scopedLive(
    "login shows the code and the page on the terminal; approving it signs the terminal in",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const ada = yield* signIn(server, "tty-login@example.com")
        const organizationId = (yield* ada.http("GET", "/v1/me")).body.organizations[0].id
        const env = `env XDG_CONFIG_HOME=${yield* tempDir} TERM=xterm-256color LANG=C.UTF-8`
        const session = yield* tmux(
          `${env} ${shellQuote(process.execPath)} ${
            shellQuote(cliScript())
          } login --url ${server.url}; echo EXIT=$?; sleep 60`
        )
        const waitFor = (pattern: RegExp) =>
          Effect.gen(function*() {
            const deadline = Date.now() + 60_000
            while (Date.now() < deadline) {
              const match = pattern.exec(session.capture())
              if (match !== null) return match
              yield* Effect.sleep("200 millis")
            }
            return assert.fail(`no ${pattern} in:\n${session.capture()}`)
          })
        const shown = yield* waitFor(/^ {4}([B-Z]{4}-[B-Z]{4})$/m)
        const screen = session.capture()
        assert.include(screen, `To sign in, open ${server.url}/device and enter the code`)
        assert.include(screen, `(or open ${server.url}/device?user_code=${shown[1]})`)
        assert.include(screen, "Waiting for approval...")
        const approved = yield* ada.http("POST", "/v1/auth/device/approve", {
          json: { user_code: shown[1] },
          headers: { ...ada.withCsrf, "x-organization-id": organizationId }
        })
        assert.strictEqual(approved.status, 200, approved.text)
        yield* waitFor(/^EXIT=0$/m)
        assert.match(
          session.capture(),
          new RegExp(`^Signed in to ${server.url} \\(organization ${organizationId}`, "m")
        )
      }),
    150_000
  )
})
