/**
 * The edge of every request: a correlation id on every response (taken from a well-formed incoming
 * `x-correlation-id` or made new), the body size limit, the access log (one line per request), and
 * the one problem-details mapping.
 */
import {
  FileSystem,
  HttpApiBuilder,
  HttpApp,
  HttpIncomingMessage,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import type { HttpApiEndpoint } from "@effect/platform"
import { Clock, Context, Effect, Exit, FiberRef, FiberRefs, HashMap, Layer, LogLevel, Option } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { recordRequest } from "../metrics/HttpMetrics.js"
import { acceptSeconds } from "../metrics/Metrics.js"
import type { DurabilityShape } from "../sql/Durability.js"
import { bodyReaders, discardInsteadOfReset, drained, drainUpTo } from "./BodyReaders.js"
import { behindProxies } from "./ClientAddress.js"
import { problemType } from "./Problem.js"
import { bodyTooLarge, fromCause, respond, shortValue } from "./Problems.js"

export const CORRELATION_HEADER = "x-correlation-id"
const wellFormed = /^[A-Za-z0-9._:-]{1,128}$/

/** The correlation id of the request this fiber serves; logs and 500 answers quote it. */
export const CurrentCorrelationId = FiberRef.unsafeMake("")

/**
 * Tags the fiber that serves one request: the correlation id (its FiberRef and log annotation), the
 * least log level, and the pre-response handler that puts the id on the answer (the server writes
 * the app's response itself before this wrapper sees it); answers when the request started, by the
 * fiber's Clock. The fiber is forked for that request and ends with it, so these are set for the
 * rest of the request rather than scoped (`Effect.locally` is an acquire/release of an old value
 * nothing would read again), and all in one step rather than as five effects: every request pays
 * for them.
 */
const tagFiber = (correlationId: string, level: LogLevel.LogLevel | undefined) =>
  Effect.withFiberRuntime<bigint>((fiber) => {
    const set = <A>(refs: FiberRefs.FiberRefs, fiberRef: FiberRef.FiberRef<A>, value: A) =>
      FiberRefs.updateAs(refs, { fiberId: fiber.id(), fiberRef, value })
    const header: HttpApp.PreResponseHandler = (_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, CORRELATION_HEADER, correlationId))
    const before = fiber.getFiberRef(HttpApp.currentPreResponseHandlers)
    let refs = set(fiber.getFiberRefs(), CurrentCorrelationId, correlationId)
    refs = set(
      refs,
      FiberRef.currentLogAnnotations,
      HashMap.set(fiber.getFiberRef(FiberRef.currentLogAnnotations), "correlation_id", correlationId as unknown)
    )
    refs = set(
      refs,
      HttpApp.currentPreResponseHandlers,
      Option.some<HttpApp.PreResponseHandler>(
        Option.isNone(before)
          ? header
          : (request, response) => Effect.flatMap(before.value(request, response), (next) => header(request, next))
      )
    )
    if (level !== undefined) refs = set(refs, FiberRef.currentMinimumLogLevel, level)
    const started = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeNanos()
    // Not `Effect.setFiberRefs`: it sets every ref the fiber has, each as an effect of its own.
    return Effect.as(Effect.updateFiberRefs(() => refs), started)
  })

/** What the route index reads of an HttpApi: its groups' endpoints. */
type AnyApi = { readonly groups: Readonly<Record<string, { readonly endpoints: Readonly<Record<string, unknown>> }>> }

interface RoutePattern {
  readonly pattern: string
  readonly segments: ReadonlyArray<string>
  readonly params: number
}

/** "METHOD path" to the route pattern it was served by (`/v1/machines/:id/exec`), for the access log. */
export type RouteOf = (method: string, path: string) => string | undefined

/** The route index: `RouteOf`, and the methods any route takes at a path (a 405's `Allow`). */
export type RouteIndex = RouteOf & { readonly methodsAt: (path: string) => ReadonlyArray<string> }

/**
 * The route patterns of `api` (src/Api.ts, passed in: the kernel imports no area's contract), by
 * method and number of segments; a literal segment wins over a parameter, as in the router.
 */
export const routeIndex = (api: AnyApi): RouteIndex => {
  const index = new Map<string, Array<RoutePattern>>()
  const methods = new Set<string>()
  for (const group of Object.values(api.groups)) {
    for (const endpoint of Object.values(group.endpoints) as Array<HttpApiEndpoint.HttpApiEndpoint.AnyWithProps>) {
      const segments = endpoint.path.split("/")
      const key = `${endpoint.method} ${segments.length}`
      methods.add(endpoint.method)
      const route = { pattern: endpoint.path, segments, params: segments.filter((s) => s.startsWith(":")).length }
      index.set(key, [...(index.get(key) ?? []), route].sort((a, b) => a.params - b.params))
    }
  }
  const find = (method: string, segments: ReadonlyArray<string>) =>
    index.get(`${method} ${segments.length}`)?.find((route) =>
      route.segments.every((segment, i) => segment === segments[i] || (segment.startsWith(":") && segments[i] !== ""))
    )?.pattern
  const routeOf = (method: string, path: string) => find(method, path.split("?", 1)[0]!.split("/"))
  const methodsAt = (path: string) => {
    const segments = path.split("?", 1)[0]!.split("/")
    return [...methods].filter((method) => find(method, segments) !== undefined)
  }
  return Object.assign(routeOf, { methodsAt })
}

/** One request's access line: what every format shows of it. */
export interface AccessLine {
  readonly message: string
  readonly method: string
  readonly route: string
  readonly status: number
  readonly duration_ms: number
  readonly correlation_id: string
  readonly fiber: string
}

/**
 * Where access lines go. By default through Effect's logger, as any log line (an embedding
 * program's logger sees them); the CLI writes them straight into its log stream in its format,
 * since Effect's log path (annotations, loggers, the structured message) cost about a tenth of an
 * exec's server time for one line.
 */
export class AccessLog extends Context.Reference<AccessLog>()("svc/kernel/http/AccessLog", {
  defaultValue: (): { readonly write: ((line: AccessLine) => void) | undefined } => ({ write: undefined })
}) {}

export interface EdgeOptions {
  /**
   * Names the route of each access line and HTTP metric; without it the line shows the request's
   * path. With `methodsAt`, a path served only for other methods answers 405 with `Allow`.
   */
  readonly routeOf?: RouteOf | RouteIndex
  /** The least level logged while serving a request (`SVC_LOG_LEVEL`); the access line is `info`. */
  readonly logLevel?: string
  /** Writes each access line itself (AccessLog); without it, the line is logged through Effect. */
  readonly accessLog?: ((line: AccessLine) => void) | undefined
  /** `SVC_TRUSTED_PROXIES`: whose X-Forwarded-For and -Proto name the client (ClientAddress.ts). */
  readonly trustedProxies?: ReadonlyArray<string> | undefined
}

const logLevels: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
}

/** What the edge writes at a request's end: its access line (none when quiet), and where to. */
interface Finish {
  readonly method: string
  /** The route template, for the HTTP metrics; none when no API route serves the path. */
  readonly template: string | undefined
  /** What the access line names (the template, else the path); none when quiet. */
  readonly route: string | undefined
  readonly correlationId: string
  readonly write: EdgeOptions["accessLog"]
}

/**
 * The end of one request, in one step: an accepted change's time into the accept histogram, the
 * request into the HTTP metrics (HttpMetrics.ts), and the access line: method, route pattern, status, duration in milliseconds (until the answer was
 * handed to the server, after its commits are durable) and, from the fiber's log annotations, the
 * correlation id. A request whose client went away before the answer logs status 499 (the nginx
 * convention); one that failed past every mapping, 500.
 */
const finish =
  ({ correlationId, method, route, template, write }: Finish, startedNanos: bigint) =>
  <E>(exit: Exit.Exit<HttpServerResponse.HttpServerResponse, E>) =>
    Effect.withFiberRuntime<void>((fiber) => {
      const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeNanos()
      const status = Exit.isSuccess(exit) ? exit.value.status : Exit.isInterrupted(exit) ? 499 : 500
      const seconds = Number(now - startedNanos) / 1e9
      if (status === 202) acceptSeconds.unsafeUpdate(seconds, fiber.getFiberRef(FiberRef.currentMetricLabels))
      recordRequest(method, template, status, seconds)
      if (route === undefined) return Effect.void
      const durationMs = Math.round(Number(now - startedNanos) / 1e4) / 100
      const message = `${method} ${route} ${status} ${durationMs}ms`
      if (write === undefined) {
        return Effect.logInfo(message).pipe(
          Effect.annotateLogs({ access: true, method, route, status, duration_ms: durationMs })
        )
      }
      write({
        message,
        method,
        route,
        status,
        duration_ms: durationMs,
        correlation_id: correlationId,
        fiber: `#${fiber.id().id}`
      })
      return Effect.void
    })

/**
 * Wraps the whole server: assigns the correlation id, refuses bodies over the limit up front,
 * holds every answer until the commits its request made are on disk (Durability: the database flushes
 * its log off the event loop), and writes the access line.
 * A request with a body reads it through BodyReaders.ts, within the same limit; the platform's own
 * readers (bytes, streams) take it from the server's MaxBodySize (`maxBodySizeLayer`), provided once
 * rather than per request.
 */
export const edge =
  (maxBodyBytes: number, durability: DurabilityShape, options: EdgeOptions = {}) =>
  (app: HttpApp.Default): HttpApp.Default => {
    const level = options.logLevel === undefined ? undefined : logLevels[options.logLevel]
    const quiet = level !== undefined && LogLevel.greaterThan(level, LogLevel.Info)
    const guardBodyReaders = bodyReaders(maxBodyBytes)
    const forwarded = behindProxies(options.trustedProxies)
    const routeOf = options.routeOf
    const methodsAt = routeOf !== undefined && "methodsAt" in routeOf ? routeOf.methodsAt : undefined
    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const path = request.url.split("?", 1)[0]!
      const template = routeOf?.(request.method, path)
      const incoming = request.headers[CORRELATION_HEADER]
      const correlationId = incoming !== undefined && wellFormed.test(incoming) ? incoming : crypto.randomUUID()
      const declared = Number(request.headers["content-length"] ?? "0")
      const serve = Effect.suspend(() => {
        if (declared > maxBodyBytes) {
          const answer = HttpServerResponse.setHeader(bodyTooLarge(maxBodyBytes), CORRELATION_HEADER, correlationId)
          return declared <= Math.max(drainUpTo, maxBodyBytes)
            ? Effect.as(drained(request), answer)
            : Effect.succeed(answer)
        }
        if (template === undefined && methodsAt !== undefined) {
          const refused = methodNotAllowed(request.method, methodsAt(path), correlationId)
          if (refused !== undefined) return Effect.succeed(refused)
        }
        if (request.headers["content-length"] === undefined) discardInsteadOfReset(request)
        if (request.method !== "GET" && request.method !== "HEAD") {
          guardBodyReaders(
            request,
            request.headers["content-type"]?.toLowerCase().includes("multipart/form-data") === true
          )
        }
        const served = forwarded === undefined ? app : forwarded(request, app)
        return Effect.zipLeft(served, durability.syncOwn)
      })
      // Quiet (a level above info): no access line, so no route to name.
      const route = quiet ? undefined : template ?? path
      const ending = { method: request.method, route, template, correlationId, write: options.accessLog }
      return Effect.flatMap(tagFiber(correlationId, level), (started) => Effect.onExit(serve, finish(ending, started)))
    })
  }

/**
 * A path that routes serve for other methods only: 405 with `Allow` rather than the 404 of a path
 * nobody serves. A HEAD where a GET is served is left to the router.
 */
const methodNotAllowed = (method: string, allowed: ReadonlyArray<string>, correlationId: string) => {
  if (allowed.length === 0 || (method === "HEAD" && allowed.includes("GET"))) return undefined
  const allow = allowed.join(", ")
  return HttpServerResponse.setHeader(
    respond(
      {
        type: problemType("method_not_allowed"),
        title: "Method not allowed",
        status: 405,
        code: "method_not_allowed",
        detail: `${shortValue(method, 16)} is not served at this path; it takes ${allow}`
      },
      { allow }
    ),
    CORRELATION_HEADER,
    correlationId
  )
}

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
