/** A terminal WebSocket client for tests: collects the screen's bytes and the close. */
import { Effect } from "effect"
import { WebSocket } from "ws"
import { eventually } from "./Machines.js"

export interface TerminalClient {
  readonly ws: WebSocket
  /** Everything the terminal sent so far, as text. */
  readonly screen: () => string
  /** The text frames svc sent (`{"type":"exit",...}`). */
  readonly messages: () => ReadonlyArray<unknown>
  readonly type: (keys: string) => Effect.Effect<void>
  readonly resize: (cols: number, rows: number) => Effect.Effect<void>
  /** Waits until the screen holds `text` (after `from` bytes of it, when given). */
  readonly waitFor: (text: string | RegExp, from?: number) => Effect.Effect<string>
  /** Waits for the close and answers its code. */
  readonly closed: Effect.Effect<number>
}

/** Opens a terminal's WebSocket: the client, or the HTTP status of a refusal. */
export const openTerminal = (url: string) =>
  Effect.async<TerminalClient | { readonly refused: number }>((resume) => {
    const ws = new WebSocket(url)
    const chunks: Array<Buffer> = []
    const messages: Array<unknown> = []
    let code: number | undefined
    ws.on("message", (data, isBinary) => {
      if (isBinary) chunks.push(data as Buffer)
      else messages.push(JSON.parse(data.toString()))
    })
    ws.on("close", (closeCode) => void (code = closeCode))
    ws.on("unexpected-response", (_request, response) => {
      response.resume()
      resume(Effect.succeed({ refused: response.statusCode ?? 0 }))
    })
    ws.on("error", () => undefined)
    const screen = () => Buffer.concat(chunks).toString("utf8")
    ws.on("open", () =>
      resume(Effect.succeed({
        ws,
        screen,
        messages: () => messages,
        type: (keys) => Effect.sync(() => ws.send(Buffer.from(keys), { binary: true })),
        resize: (cols, rows) => Effect.sync(() => ws.send(JSON.stringify({ type: "resize", cols, rows }))),
        waitFor: (text, from = 0) =>
          eventually(
            Effect.sync(() => {
              const seen = screen().slice(from)
              return (typeof text === "string" ? seen.includes(text) : text.test(seen)) ? seen : undefined
            }),
            30_000
          ),
        closed: eventually(Effect.sync(() => code), 30_000)
      })))
  })

/** Opens a terminal that must open. */
export const mustOpen = (url: string) =>
  Effect.flatMap(
    openTerminal(url),
    (opened) => "refused" in opened ? Effect.dieMessage(`terminal refused: ${opened.refused}`) : Effect.succeed(opened)
  )
