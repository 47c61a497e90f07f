/**
 * Following a server-sent event stream of the API (an operation's events): the typed client reads
 * a whole answer, a stream has to be read as it comes. The route's path comes from the API
 * definition, so it cannot drift from the server; a dropped connection is resumed with
 * `Last-Event-ID` (a read, retried like the client's reads: five times, backing off).
 */
import { Effect, Stream } from "effect"
import { parseEvent, type ServerEvent } from "../client/ServerEvents.js"
import { type Connection, routePath } from "./Connect.js"
import { ApiProblem, CommandFailed } from "./Failure.js"

/**
 * The events of `path` until the server ends the stream; reconnects after a dropped connection
 * from the last event id seen. An error answer (404, 401) fails with its problem body.
 */
export const follow = (connection: Connection, path: string): Stream.Stream<ServerEvent, ApiProblem | CommandFailed> =>
  Stream.asyncPush<ServerEvent, ApiProblem | CommandFailed>((emit) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const abort = new AbortController()
        const run = async () => {
          let lastId: string | undefined
          let failures = 0
          while (true) {
            try {
              const response = await fetch(connection.url + path, {
                signal: abort.signal,
                headers: {
                  accept: "text/event-stream",
                  authorization: `Bearer ${connection.apiKey}`,
                  ...(lastId === undefined ? {} : { "last-event-id": lastId })
                }
              })
              if (response.status !== 200) {
                const body = await response.json().catch(() => undefined)
                if ([408, 429, 502, 503, 504].includes(response.status) && failures++ < 5) {
                  await pause(failures)
                  continue
                }
                return emit.fail(ApiProblem.fromAnswer(response.status, body))
              }
              const decoder = new TextDecoder()
              let buffer = ""
              for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
                buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, "\n")
                let end: number
                while ((end = buffer.indexOf("\n\n")) !== -1) {
                  const event = parseEvent(buffer.slice(0, end))
                  buffer = buffer.slice(end + 2)
                  if (event === undefined) continue
                  if (event.id !== undefined) lastId = event.id
                  failures = 0
                  emit.single(event)
                }
              }
              return emit.end()
            } catch (error) {
              if (abort.signal.aborted) return
              if (failures++ >= 5) {
                return emit.fail(new CommandFailed({ message: `cannot reach ${connection.url}: ${String(error)}` }))
              }
              await pause(failures)
            }
          }
        }
        void run()
        return abort
      }),
      (abort) => Effect.sync(() => abort.abort())
    )
  )

const pause = (failures: number) => new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** failures)))

/** An operation's `output` event (an exec's bytes) written to this process's stdout or stderr as it came. */
export const writeOutput = (data: string) =>
  Effect.sync(() => {
    const { data_base64, stream } = JSON.parse(data) as { stream: string; data_base64: string }
    ;(stream === "stderr" ? process.stderr : process.stdout).write(Buffer.from(data_base64, "base64"))
  })

/** Follows an operation's events to its end, writing its output as it comes. */
export const streamOutput = (connection: Connection, operationId: string) =>
  follow(connection, routePath("operations", "events", { id: operationId })).pipe(
    Stream.takeUntil((event) => event.event === "end"),
    Stream.runForEach((event) => event.event === "output" ? writeOutput(event.data) : Effect.void)
  )
