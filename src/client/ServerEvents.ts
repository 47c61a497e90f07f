/**
 * Server-sent event streams of the API (an operation's events, an agent conversation's) as async
 * iterators, for programs that do not use Effect: `for await (const event of svc.events.operation(id))`.
 * A dropped connection is resumed with `Last-Event-ID` (the ids are persisted and monotonic), retried
 * five times backing off; an error answer throws its problem details.
 */

export interface ServerEvent {
  readonly id: string | undefined
  readonly event: string
  readonly data: string
}

/** One SSE block (`field: value` lines; comments ignored) as an event, or undefined for none. */
export const parseEvent = (block: string): ServerEvent | undefined => {
  let id: string | undefined
  let event = "message"
  const data: Array<string> = []
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
    if (field === "id") id = value
    else if (field === "event") event = value
    else if (field === "data") data.push(value)
  }
  return data.length === 0 && id === undefined ? undefined : { id, event, data: data.join("\n") }
}

/** An error answer of a stream route: its status and problem details (`code`, `detail`). */
export class StreamError extends Error {
  readonly status: number
  readonly code: string
  readonly body: unknown
  constructor(status: number, body: unknown) {
    const fields = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>
    const code = typeof fields.code === "string" ? fields.code : `http_${status}`
    super(typeof fields.detail === "string" ? `${code}: ${fields.detail}` : `the server answered ${status}`)
    this.name = "StreamError"
    this.status = status
    this.code = code
    this.body = body
  }
}

const retriable = new Set([408, 429, 502, 503, 504])
const pause = (failures: number) => new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** failures)))

/**
 * The events of `url` until the server ends the stream (or the caller stops iterating, which
 * closes the connection).
 */
export async function* readEvents(
  url: string,
  headers: Record<string, string>,
  options: { readonly signal?: AbortSignal } = {}
): AsyncGenerator<ServerEvent, void, undefined> {
  const abort = new AbortController()
  options.signal?.addEventListener("abort", () => abort.abort(options.signal?.reason), { once: true })
  let lastId: string | undefined
  let failures = 0
  try {
    while (true) {
      let response: Response
      try {
        response = await fetch(url, {
          signal: abort.signal,
          headers: {
            ...headers,
            accept: "text/event-stream",
            ...(lastId === undefined ? {} : { "last-event-id": lastId })
          }
        })
      } catch (error) {
        if (abort.signal.aborted || failures++ >= 5) throw error
        await pause(failures)
        continue
      }
      if (response.status !== 200) {
        const body = await response.json().catch(() => undefined)
        if (retriable.has(response.status) && failures++ < 5) {
          await pause(failures)
          continue
        }
        throw new StreamError(response.status, body)
      }
      const decoder = new TextDecoder()
      let buffer = ""
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, "\n")
          let end: number
          while ((end = buffer.indexOf("\n\n")) !== -1) {
            const event = parseEvent(buffer.slice(0, end))
            buffer = buffer.slice(end + 2)
            if (event === undefined) continue
            if (event.id !== undefined) lastId = event.id
            failures = 0
            yield event
          }
        }
        return
      } catch (error) {
        // The connection dropped mid-stream: resume after the last event seen.
        if (abort.signal.aborted || failures++ >= 5) throw error
        await pause(failures)
      }
    }
  } finally {
    abort.abort()
  }
}
