/**
 * The browser terminal: xterm.js on the terminal WebSocket (docs/terminals.md). A ticket from
 * `POST /v1/machines/{id}/terminals` opens it; bytes travel as binary frames both ways, a resize as
 * a text frame. This module and xterm.js are a chunk loaded only when a terminal is opened.
 */
import { FitAddon } from "@xterm/addon-fit"
import { Terminal } from "@xterm/xterm"
import { useEffect, useRef, useState } from "preact/hooks"
import { describe, post } from "../api.js"
import { isDark } from "../theme.js"
import type { Ticket } from "../types.js"
import { ErrorLine } from "../ui.js"

/**
 * xterm.js writes its colours and cell sizes into <style> elements it makes; the console's CSP
 * admits a style element only with the page's nonce, so the ones made here carry it.
 */
const nonce = document.querySelector<HTMLMetaElement>("meta[name=\"svc-nonce\"]")?.content ?? ""
const makeElement = document.createElement.bind(document)
document.createElement = ((tag: string, options?: ElementCreationOptions) => {
  const element = makeElement(tag, options)
  if (tag.toLowerCase() === "style") element.setAttribute("nonce", nonce)
  return element
}) as typeof document.createElement

export const TerminalView = ({ machineId }: { machineId: string }) => {
  const box = useRef<HTMLDivElement>(null)
  const [state, setState] = useState<string>("Connecting…")
  const [error, setError] = useState<string | undefined>(undefined)
  useEffect(() => {
    const terminal = new Terminal({
      cursorBlink: true,
      fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
      fontSize: 14,
      theme: isDark()
        ? { background: "#0d1117", foreground: "#e6edf3" }
        : { background: "#ffffff", foreground: "#1f2328", cursor: "#1f2328", selectionBackground: "#b6d4fe" }
    })
    const fit = new FitAddon()
    terminal.loadAddon(fit)
    terminal.open(box.current!)
    fit.fit()
    let socket: WebSocket | undefined
    let closed = false
    const encoder = new TextEncoder()
    const resize = () => {
      fit.fit()
      if (socket?.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({ type: "resize", cols: terminal.cols, rows: terminal.rows }))
      }
    }
    const observer = new ResizeObserver(resize)
    observer.observe(box.current!)
    post<Ticket>(`/v1/machines/${machineId}/terminals`, { cols: terminal.cols, rows: terminal.rows }).then((ticket) => {
      if (closed) return
      socket = new WebSocket(ticket.url)
      socket.binaryType = "arraybuffer"
      socket.onopen = () => {
        setState("Connected")
        terminal.focus()
      }
      socket.onmessage = (message) => {
        if (typeof message.data === "string") {
          const frame = JSON.parse(message.data) as { type: string; exit_code?: number }
          if (frame.type === "exit") setState(`The shell exited (${frame.exit_code}).`)
        } else terminal.write(new Uint8Array(message.data as ArrayBuffer))
      }
      socket.onclose = (event) =>
        setState((said) =>
          event.code === 4409
            ? "The machine stopped."
            : event.code === 4403
            ? "Access was revoked."
            : said.startsWith("The shell exited")
            ? said
            : "Disconnected."
        )
      terminal.onData((data) => socket?.readyState === WebSocket.OPEN && socket.send(encoder.encode(data)))
    }, (failure) => {
      setError(describe(failure))
      setState("Not connected")
    })
    return () => {
      closed = true
      observer.disconnect()
      socket?.close()
      terminal.dispose()
    }
  }, [machineId])
  return (
    <div class="terminal-wrap">
      <p role="status" class="muted">{state}</p>
      <ErrorLine error={error} />
      <div class="terminal-box" ref={box} aria-label="Terminal" />
    </div>
  )
}
