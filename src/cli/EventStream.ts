/**
 * Following a server-sent event stream of the API (an operation's events): the typed client reads
 * a whole answer, a stream has to be read as it comes. The route's path comes from the API
 * definition, so it cannot drift from the server; a dropped connection is resumed with
 * `Last-Event-ID` (a read, retried like the client's reads: five times, backing off).
 */
import { Effect, Stream } from "effect"
import { readEvents, type ServerEvent, StreamError } from "../client/ServerEvents.js"
import { type Connection, routePath } from "./Connect.js"
import { ApiProblem, CommandFailed } from "./Failure.js"

/**
 * The events of `path` until the server ends the stream; reconnects after a dropped connection
 * from the last event id seen (the Promise client's reader, src/client/ServerEvents.ts). An error
 * answer (404, 401) fails with its problem body; a server it cannot reach, with a sentence.
 */
export const follow = (connection: Connection, path: string): Stream.Stream<ServerEvent, ApiProblem | CommandFailed> =>
  Stream.unwrapScoped(
    Effect.map(
      // Aborted when the stream ends early, so a pending fetch does not wait for the next event.
      Effect.acquireRelease(Effect.sync(() => new AbortController()), (abort) => Effect.sync(() => abort.abort())),
      (abort) =>
        Stream.fromAsyncIterable(
          readEvents(connection.url + path, { authorization: `Bearer ${connection.apiKey}` }, { signal: abort.signal }),
          (error) =>
            error instanceof StreamError
              ? ApiProblem.fromAnswer(error.status, error.body)
              : new CommandFailed({ message: `cannot reach ${connection.url}: ${String(error)}` })
        )
    )
  )

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
