/**
 * `svc terminal MACHINE [-- COMMAND...]`: a terminal on a running machine (docs/terminals.md). The
 * machine is named by id or name; the server and key come from `--url`/`SVC_URL` and
 * `--api-key`/`SVC_API_KEY`. The local terminal is put in raw mode, so every key (Ctrl-C included)
 * goes to the machine; its window size follows the local one. Exits with the command's exit code,
 * 1 on an API error (its code printed), 255 when the connection ended without an exit.
 */
import { Args, Command, Options } from "@effect/cli"
import { Config, Effect, Option } from "effect"
import { WebSocket } from "ws"
import { uuidPattern } from "../kernel/domain/Ids.js"

interface Target {
  readonly url: string
  readonly apiKey: string
}

class ApiFailure extends Error {}

const call = async (target: Target, method: string, path: string, body?: unknown) => {
  const response = await fetch(new URL(path, target.url), {
    method,
    headers: {
      authorization: `Bearer ${target.apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const answer = await response.json().catch(() => ({})) as Record<string, any>
  if (!response.ok) {
    throw new ApiFailure(`${response.status} ${answer.code ?? ""}: ${answer.detail ?? response.statusText}`)
  }
  return answer
}

/** The machine's id: `machine` itself when it is one, else the live machine of that name. */
const machineId = async (target: Target, machine: string) => {
  if (uuidPattern.test(machine)) return machine
  let after: string | null = null
  do {
    const query: string = after === null ? "" : `&cursor=${encodeURIComponent(after)}`
    const page = await call(target, "GET", `/v1/machines?limit=100${query}`)
    const found = (page.items as Array<{ id: string; name: string }>).find((item) => item.name === machine)
    if (found !== undefined) return found.id
    after = page.next_cursor ?? null
  } while (after !== null)
  throw new ApiFailure(`no machine named ${machine}`)
}

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
    machine: Args.text({ name: "MACHINE" }).pipe(Args.withDescription("the machine's id or name")),
    command: Args.text({ name: "COMMAND" }).pipe(Args.repeated),
    url: Options.text("url").pipe(Options.withFallbackConfig(Config.string("SVC_URL")), Options.optional),
    apiKey: Options.text("api-key").pipe(Options.withFallbackConfig(Config.string("SVC_API_KEY")), Options.optional)
  },
  (flags) =>
    Effect.gen(function*() {
      const target = {
        url: Option.getOrElse(flags.url, () => "http://127.0.0.1:8080"),
        apiKey: Option.getOrElse(flags.apiKey, () => "")
      }
      const code = yield* Effect.tryPromise({
        try: async () => {
          const id = await machineId(target, flags.machine)
          const ticket = await call(target, "POST", `/v1/machines/${id}/terminals`, {
            cols: process.stdout.columns ?? 80,
            rows: process.stdout.rows ?? 24,
            command: flags.command.length === 0 ? null : flags.command
          })
          return relay(ticket.url as string)
        },
        catch: (error) => error
      }).pipe(Effect.catchAll((error) =>
        Effect.sync(() => {
          process.stderr.write(`svc: ${error instanceof Error ? error.message : String(error)}\n`)
          return 1
        })
      ))
      yield* Effect.sync(() => process.exit(code))
    })
).pipe(Command.withDescription("Open a terminal on a running machine (raw mode; exits with the command's code)"))
