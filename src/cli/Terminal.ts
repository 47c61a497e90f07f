/**
 * `svc terminal MACHINE [COMMAND...]`: a terminal on a running machine (docs/terminals.md). The
 * machine is named by id or name; the server and key are every command's (src/cli/Connect.ts), and
 * the ticket comes from the typed client. The local terminal is put in raw mode, so every key
 * (Ctrl-C included) goes to the machine; its window size follows the local one. Exits with the
 * command's exit code, 1 on an API error (its code printed), 255 when the connection ended without
 * an exit.
 */
import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import { WebSocket } from "ws"
import { CommandFailed } from "./Failure.js"
import { machineArg, withMachine } from "./Machines.js"

/** Relays between this terminal and the WebSocket; answers the command's exit code. */
const relay = (url: string) =>
  new Promise<number>((resolve) => {
    const ws = new WebSocket(url)
    const stdin = process.stdin
    const raw = stdin.isTTY === true
    let exitCode = 255
    const size = () =>
      JSON.stringify({ type: "resize", cols: process.stdout.columns ?? 80, rows: process.stdout.rows ?? 24 })
    const onResize = () => ws.readyState === WebSocket.OPEN && ws.send(size())
    const onInput = (chunk: Buffer) => ws.readyState === WebSocket.OPEN && ws.send(chunk, { binary: true })
    ws.on("open", () => {
      if (raw) stdin.setRawMode(true)
      stdin.on("data", onInput)
      stdin.resume()
      process.stdout.on("resize", onResize)
    })
    ws.on("message", (data, isBinary) => {
      if (isBinary) return void process.stdout.write(data as Buffer)
      const message = JSON.parse(data.toString()) as { type?: string; exit_code?: number }
      if (message.type === "exit" && typeof message.exit_code === "number") exitCode = message.exit_code
    })
    ws.on("unexpected-response", (_request, response) => {
      process.stderr.write(`svc: the terminal was refused (${response.statusCode})\n`)
      response.resume()
    })
    ws.on("error", () => undefined)
    ws.on("close", (code, reason) => {
      if (raw) stdin.setRawMode(false)
      stdin.off("data", onInput)
      stdin.pause()
      process.stdout.off("resize", onResize)
      if (code !== 1000 && code !== 1005 && code !== 1006) {
        process.stderr.write(`\r\nsvc: terminal closed (${code}${reason.length > 0 ? `: ${reason}` : ""})\r\n`)
      }
      resolve(exitCode)
    })
  })

export const terminal = Command.make(
  "terminal",
  {
    machine: machineArg,
    command: Args.text({ name: "COMMAND" }).pipe(
      Args.repeated,
      Args.withDescription("The command to run in it (default: a login shell)")
    )
  },
  (flags) =>
    Effect.gen(function*() {
      const { client, id } = yield* withMachine(flags.machine)
      const ticket = yield* client.terminals.createTerminal({
        path: { id },
        payload: {
          cols: process.stdout.columns ?? 80,
          rows: process.stdout.rows ?? 24,
          command: flags.command.length === 0 ? null : [...flags.command]
        }
      })
      const code = yield* Effect.promise(() => relay(ticket.url))
      if (code !== 0) return yield* new CommandFailed({ message: "", exitCode: code })
    })
).pipe(Command.withDescription("Open a terminal on a running machine (raw mode; exits with the command's code)"))
