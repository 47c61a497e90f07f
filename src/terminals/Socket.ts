/**
 * The terminal WebSocket, `/v1/machines/{id}/terminals/{terminal_id}/socket?ticket=...`: a raw
 * upgrade route (the platform's HttpApi has no WebSocket server), served by `ws` on the Node
 * server's `upgrade` event before the Effect app sees it (src/Http.ts). The ticket is the only
 * credential: it is single-use and names its terminal, so no cookie or key is looked at.
 *
 * Frames: binary both ways are the terminal's bytes; a text frame `{"type":"resize","cols","rows"}`
 * from the client resizes it (other text is ignored); svc sends `{"type":"exit","exit_code"}` when
 * the command exits and closes with 1000. The WebSocket's close ends the terminal's session.
 */
import { Cause, Effect, Exit, Fiber, Queue, Runtime } from "effect"
import type * as NodeHttp from "node:http"
import type * as NodeStream from "node:stream"
import { WebSocket, WebSocketServer } from "ws"
import type { TerminalInput, TerminalSize } from "../drivers/MachineDriver.js"
import { uuidText } from "../kernel/domain/Ids.js"
import { InternalError, InvalidRequest, ResourceNotFound } from "../kernel/http/Errors.js"
import { type ProblemBody, rawProblem, specOf, toBody } from "../kernel/http/Problem.js"
import { closeCodes, TerminalChannels } from "./Channels.js"
import type { TerminalRow } from "./Repo.js"
import { Terminals, TICKET_PARAM } from "./Terminals.js"

const socketPath = new RegExp(`^/v1/machines/(${uuidText})/terminals/(${uuidText})/socket(\\?.*)?$`, "i")

/** Output waiting in a WebSocket's buffer past this size holds the terminal's reading (back pressure). */
const highWaterBytes = 1 << 20

const problem = (error: ResourceNotFound | InvalidRequest | InternalError): ProblemBody => toBody(error, specOf(error)!)

/** What ws itself requires of an upgrade, checked before the ticket is used (a refusal then would waste it). */
const isWebSocketUpgrade = (request: NodeHttp.IncomingMessage) =>
  request.method === "GET" && request.headers.upgrade?.toLowerCase() === "websocket" &&
  /^[+/0-9A-Za-z]{22}==$/.test(request.headers["sec-websocket-key"] ?? "") &&
  ["8", "13"].includes(request.headers["sec-websocket-version"] ?? "")

/** A resize frame's size, or undefined for any other text. */
export const resizeOf = (text: string): TerminalSize | undefined => {
  try {
    const message = JSON.parse(text) as { type?: unknown; cols?: unknown; rows?: unknown }
    const cell = (value: unknown) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 1000
    if (message?.type !== "resize" || !cell(message.cols) || !cell(message.rows)) return undefined
    return { cols: message.cols as number, rows: message.rows as number }
  } catch {
    return undefined
  }
}

export const makeTerminalSockets = Effect.gen(function*() {
  const terminals = yield* Terminals
  const channels = yield* TerminalChannels
  // Captured once: the handlers below run outside any fiber, from Node's server events.
  const runtime = yield* Effect.runtime<never>()
  const run = Runtime.runPromise(runtime)
  const fork = Runtime.runFork(runtime)
  const server = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 })

  /** Relays between the WebSocket and the terminal's PTY until either ends. */
  const attach = (ws: WebSocket, row: TerminalRow) => {
    const input = Effect.runSync(Queue.unbounded<TerminalInput>())
    ws.on("message", (data, isBinary) => {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)
      if (isBinary) return void Queue.unsafeOffer(input, bytes)
      const size = resizeOf(bytes.toString("utf8"))
      if (size !== undefined) Queue.unsafeOffer(input, size)
    })
    const output = (chunk: Uint8Array) =>
      Effect.async<void>((resume) => {
        if (ws.readyState !== WebSocket.OPEN) return resume(Effect.void)
        let waiting = false
        ws.send(chunk, { binary: true }, () => waiting && resume(Effect.void))
        if (ws.bufferedAmount > highWaterBytes) waiting = true
        else resume(Effect.void)
      })
    const fiber = fork(terminals.run(row, input, output))
    const close = (code: number, reason: string) => {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(code, reason)
    }
    fiber.addObserver((exit) => {
      if (Exit.isSuccess(exit)) {
        if (ws.readyState === WebSocket.OPEN) {
          ws.send(JSON.stringify({ type: "exit", exit_code: exit.value.exitCode }))
        }
        return close(1000, "exited")
      }
      const failure = Cause.failureOption(exit.cause)
      if (failure._tag === "Some") {
        return failure.value._tag === "NotRunning"
          ? close(closeCodes.machineStopped, "machine stopped")
          : close(1011, failure.value.message.slice(0, 120))
      }
      if (!Cause.isInterruptedOnly(exit.cause)) close(1011, "internal error")
    })
    const forget = Effect.runSync(channels.register({
      terminalId: row.id,
      organizationId: row.organization_id,
      userId: row.created_by,
      machineId: row.machine_id,
      // The session ends now, not after the client answers the close.
      close: (code, reason) => {
        close(code, reason)
        fork(Fiber.interrupt(fiber))
      }
    }))
    ws.on("error", () => ws.terminate())
    ws.on("close", () => {
      forget()
      fork(Effect.zipRight(Fiber.interrupt(fiber), Queue.shutdown(input)))
    })
  }

  return {
    matches: (url: string | undefined) => socketPath.test(url ?? ""),
    upgrade: (request: NodeHttp.IncomingMessage, socket: NodeStream.Duplex, head: Buffer) => {
      socket.on("error", () => socket.destroy())
      const match = socketPath.exec(request.url ?? "")!
      if (!isWebSocketUpgrade(request)) {
        return rawProblem(socket, problem(new InvalidRequest({ detail: "Not a WebSocket upgrade" })))
      }
      const ticket = new URLSearchParams(match[3]?.slice(1) ?? "").get(TICKET_PARAM) ?? ""
      run(Effect.either(terminals.open(match[2]!.toLowerCase(), ticket))).then((opened) => {
        if (opened._tag === "Left") return rawProblem(socket, toBody(opened.left, specOf(opened.left)!))
        if (opened.right._tag === "None") {
          return rawProblem(socket, problem(new ResourceNotFound({ detail: "Unknown, used or expired ticket" })))
        }
        const row = opened.right.value
        server.handleUpgrade(request, socket, head, (ws) => attach(ws, row))
      }, () => rawProblem(socket, problem(new InternalError({ detail: "Internal error" }))))
    }
  }
})

export type TerminalSockets = Effect.Effect.Success<typeof makeTerminalSockets>

/** Wraps `server` so that terminal upgrades go to `sockets`, everything else as before. */
export const withTerminalSockets = (server: NodeHttp.Server, sockets: TerminalSockets): NodeHttp.Server => {
  const emit = server.emit.bind(server) as (event: string, ...args: Array<any>) => boolean
  server.emit = ((event: string, ...args: Array<any>) => {
    if (event === "upgrade" && sockets.matches((args[0] as NodeHttp.IncomingMessage).url)) {
      sockets.upgrade(args[0], args[1], args[2])
      return true
    }
    return emit(event, ...args)
  }) as typeof server.emit
  return server
}
