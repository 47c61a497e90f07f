/**
 * The edge of every request: a correlation id on every response (taken from a well-formed incoming
 * `x-correlation-id` or made new), the body size limit, and the one problem-details mapping.
 */
import {
  FileSystem,
  HttpApiBuilder,
  HttpApp,
  HttpIncomingMessage,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, FiberRef, HashMap, Layer, Option } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import type { DurabilityShape } from "../sql/Durability.js"
import { bodyTooLarge, fromCause } from "./Problems.js"

export const CORRELATION_HEADER = "x-correlation-id"
const wellFormed = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * A streamed (chunked) body can only be measured while it is read. When it passes the limit the
 * platform destroys the request stream, which resets the socket before the 413 answer is written.
 * For such requests, "destroy" discards the rest of the body instead, so the client reads its 413;
 * Node's request timeout still bounds how long a client may keep sending.
 */
const discardInsteadOfReset = (request: HttpServerRequest.HttpServerRequest) => {
  const incoming = NodeHttpServerRequest.toIncomingMessage(request)
  incoming.destroy = function(this: typeof incoming) {
    this.resume()
    return this
  }
}

/** The correlation id of the request this fiber serves; logs and 500 answers quote it. */
export const CurrentCorrelationId = FiberRef.unsafeMake("")

/**
 * The fiber that serves one request: it is forked for that request and ends with it, so what the
 * edge puts in its FiberRefs is set for the rest of the request, not scoped with `Effect.locally`
 * or `Effect.annotateLogs` (each an acquire/release of the old value that nothing would read again).
 */
const tagFiber = (correlationId: string) =>
  FiberRef.set(CurrentCorrelationId, correlationId).pipe(
    Effect.zipRight(
      FiberRef.update(FiberRef.currentLogAnnotations, HashMap.set<string, unknown>("correlation_id", correlationId))
    ),
    // The server writes the app's response itself before this wrapper sees it, so the header is
    // added through a pre-response handler rather than to the returned value.
    Effect.zipRight(HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, CORRELATION_HEADER, correlationId))
    ))
  )

/**
 * Wraps the whole server: assigns the correlation id, refuses bodies over the limit up front, and
 * holds every answer until the commits its request made are on disk (Durability: the database flushes
 * its log off the event loop).
 * The limit for bodies read in streaming is the server's MaxBodySize (`maxBodySizeLayer`), provided
 * once rather than per request.
 */
export const edge = (maxBodyBytes: number, durability: DurabilityShape) => (app: HttpApp.Default): HttpApp.Default =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const incoming = request.headers[CORRELATION_HEADER]
    const correlationId = incoming !== undefined && wellFormed.test(incoming) ? incoming : crypto.randomUUID()
    const declared = Number(request.headers["content-length"] ?? "0")
    if (declared > maxBodyBytes) {
      return Effect.succeed(HttpServerResponse.setHeader(bodyTooLarge(maxBodyBytes), CORRELATION_HEADER, correlationId))
    }
    if (request.headers["content-length"] === undefined) discardInsteadOfReset(request)
    return Effect.zipRight(tagFiber(correlationId), Effect.zipLeft(app, durability.syncOwn))
  })

/** The body size limit of every request, in the server's context (read when a body is read). */
export const maxBodySizeLayer = (maxBodyBytes: number) =>
  Layer.succeed(HttpIncomingMessage.MaxBodySize, Option.some(FileSystem.Size(maxBodyBytes)))

/** Turns every failure of the API's routes, typed or not, into a problem-details response. */
export const ProblemsLive = HttpApiBuilder.middleware(
  Effect.map(
    AppConfig,
    (config) => (app: HttpApp.Default) =>
      Effect.catchAllCause(
        app,
        (cause) =>
          Effect.flatMap(FiberRef.get(CurrentCorrelationId), (correlationId) =>
            fromCause(cause, correlationId, config.maxBodyBytes))
      )
  )
)
