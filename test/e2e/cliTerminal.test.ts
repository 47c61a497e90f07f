/**
 * Progress on a terminal: `svc ops wait` run inside a real pseudo-terminal (tmux, on a socket of
 * its own) shows one line that keeps updating (spinner, status, seconds) and is replaced by the
 * outcome, where off a terminal it prints a plain line per state (test/e2e/cliMachines.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import { makeClient } from "../../src/index.js"
import { bin } from "../support/Binary.js"
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
        const exec = yield* client.machines.exec({ path: { id: created.machine_id }, payload: { shell: "sleep 6" } })
        const env = `env SVC_URL=${server.url} SVC_API_KEY=${owner.api_key} XDG_CONFIG_HOME=${yield* tempDir} ` +
          "TERM=xterm-256color LANG=C.UTF-8"
        const session = yield* tmux(
          `${env} ${shellQuote(process.execPath)} ${
            shellQuote(bin)
          } ops wait ${exec.operation_id}; echo EXIT=$?; sleep 60`
        )
        const frames: Array<string> = []
        const deadline = Date.now() + 90_000
        while (!frames.at(-1)?.includes("EXIT=") && Date.now() < deadline) {
          yield* Effect.sleep("150 millis")
          frames.push(session.capture())
        }
        const final = frames.at(-1)!
        assert.include(final, "EXIT=0", final)
        const id = exec.operation_id
        // While it ran: a spinner, the status and the seconds so far, on one line.
        const running = new RegExp(`^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] exec ${id}: running \\d+\\.\\ds$`, "m")
        const seen = frames.filter((frame) => running.test(frame))
        assert.isAbove(seen.length, 1, frames.join("\n---\n"))
        // The line is redrawn (its seconds change), never added to.
        const times = new Set(seen.map((frame) => running.exec(frame)![0].replace(/^\S+ /, "")))
        assert.isAbove(times.size, 1)
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
})
