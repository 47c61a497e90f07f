/**
 * The edge of every request: a correlation id on every response (taken from a well-formed incoming
 * `x-correlation-id` or made new), the body size limit, and the one problem-details mapping.
 */
import { HttpApiBuilder, HttpApp, HttpIncomingMessage, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { bodyTooLarge, fromCause } from "./Problems.js"

export const CORRELATION_HEADER = "x-correlation-id"
const wellFormed = /^[A-Za-z0-9._:-]{1,128}$/

/** Wraps the whole server: assigns the correlation id and refuses bodies over the limit up front. */
export const edge = (maxBodyBytes: number) => (app: HttpApp.Default): HttpApp.Default =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const incoming = request.headers[CORRELATION_HEADER]
    const correlationId = incoming !== undefined && wellFormed.test(incoming) ? incoming : crypto.randomUUID()
    const declared = Number(request.headers["content-length"] ?? "0")
    const response = declared > maxBodyBytes
      ? bodyTooLarge(maxBodyBytes)
      : yield* app.pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(maxBodyBytes)),
        Effect.provideService(
          HttpServerRequest.HttpServerRequest,
          request.modify({ headers: { ...request.headers, [CORRELATION_HEADER]: correlationId } })
        )
      )
    return HttpServerResponse.setHeader(response, CORRELATION_HEADER, correlationId)
  })

/** Turns every failure of the API's routes, typed or not, into a problem-details response. */
export const ProblemsLive = HttpApiBuilder.middleware(Effect.map(AppConfig, (config) => (app: HttpApp.Default) =>
  Effect.catchAllCause(app, (cause) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      fromCause(cause, request.headers[CORRELATION_HEADER] ?? "", config.maxBodyBytes)))))
