/**
 * `svc terminal` through a real terminal: tmux runs the CLI against a real server and sandbox; keys
 * typed in the pane reach the machine's shell in raw mode, the pane's size is the PTY's, and the
 * CLI exits with the command's exit code.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import { bin } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { eventually, runningMachine } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const tmux = (...args: Array<string>) => NodeChild.execFileSync("tmux", args, { encoding: "utf8" })

describe("svc terminal", () => {
  it.scopedLive("relays a raw terminal through tmux and exits with the command's code", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ runtime: "sandbox" })
      const owner = yield* server.bootstrap("owner@example.com")
      const api = client(server.url, { key: owner.api_key })
      yield* runningMachine(api, "cli-term", { internet_access: false })
      const session = `svc-terminal-${process.pid}`
      yield* Effect.acquireRelease(
        Effect.sync(() =>
          tmux(
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "100",
            "-y",
            "30",
            `SVC_URL=${server.url} SVC_API_KEY=${owner.api_key} ${process.execPath} ${bin} terminal cli-term; ` +
              "echo EXIT=$?; sleep 60"
          )
        ),
        () => Effect.sync(() => void NodeChild.spawnSync("tmux", ["kill-session", "-t", session]))
      )
      const pane = () => tmux("capture-pane", "-p", "-t", session)
      const shows = (text: string) => eventually(Effect.sync(() => pane().includes(text) ? true : undefined), 60_000)
      // The prompt of the machine's shell: ready for keys.
      yield* eventually(Effect.sync(() => /[#$] ?$/m.test(pane()) ? true : undefined), 60_000)
      tmux("send-keys", "-t", session, "stty size; echo sum=$((6*7))", "Enter")
      yield* shows("sum=42")
      assert.include(pane(), "30 100")
      // Ctrl-C goes to the machine (raw mode), not to the CLI: the CLI stays, the sleep is interrupted.
      tmux("send-keys", "-t", session, "sleep 100", "Enter")
      tmux("send-keys", "-t", session, "C-c")
      tmux("send-keys", "-t", session, "echo after=$?", "Enter")
      yield* shows("after=130")
      tmux("send-keys", "-t", session, "exit 3", "Enter")
      yield* shows("EXIT=3")
    }), { timeout: 120_000 })
})
