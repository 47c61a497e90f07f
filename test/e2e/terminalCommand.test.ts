/**
 * `svc terminal` through a real terminal: tmux runs the CLI against a real server and sandbox; keys
 * typed in the pane reach the machine's shell in raw mode, the pane's size is the PTY's, and the
 * CLI exits with the command's exit code.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import { cliScript } from "../support/CheckoutBundle.js"
import { client } from "../support/Http.js"
import { eventually, realSleep, runningMachine } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

/** tmux on a socket of its own, so other tmux servers (and the CLI's tmux test) cannot meet it. */
const socket = `svc-terminal-${process.pid}`
const tmux = (...args: Array<string>) =>
  NodeChild.execFileSync("tmux", ["-u", "-L", socket, ...args], { encoding: "utf8" })

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
            `SVC_URL=${server.url} SVC_API_KEY=${owner.api_key} ${process.execPath} ${cliScript()} terminal cli-term; ` +
              "echo EXIT=$?; sleep 60"
          )
        ),
        () => Effect.sync(() => void NodeChild.spawnSync("tmux", ["-L", socket, "kill-server"]))
      )
      const pane = () => tmux("capture-pane", "-p", "-t", session)
      // A wait that ends in the pane's text, so a failure shows what the terminal showed.
      const until = (seen: (text: string) => boolean, what: string) =>
        eventually(Effect.sync(() => seen(pane()) ? true : undefined), 60_000).pipe(
          Effect.catchAllDefect(() => Effect.dieMessage(`${what} never shown; the pane: ${JSON.stringify(pane())}`))
        )
      const shows = (text: string) => until((seen) => seen.includes(text), text)
      // The prompt of the machine's shell: ready for keys.
      yield* until((seen) => /[#$] ?$/m.test(seen), "the prompt")
      tmux("send-keys", "-t", session, "stty size; echo sum=$((6*7))", "Enter")
      yield* shows("sum=42")
      assert.include(pane(), "30 100")
      // Ctrl-C goes to the machine (raw mode), not to the CLI: the CLI stays, the sleep is interrupted.
      // The sleep must be running (the terminal's foreground) before the key, or bash gets it first.
      tmux("send-keys", "-t", session, "echo sleeping=$((2*3)); sleep 100", "Enter")
      yield* shows("sleeping=6")
      yield* realSleep(500)
      tmux("send-keys", "-t", session, "C-c")
      tmux("send-keys", "-t", session, "echo after=$?", "Enter")
      yield* shows("after=130")
      tmux("send-keys", "-t", session, "exit 3", "Enter")
      yield* shows("EXIT=3")
    }), { timeout: 120_000 })
})
