/**
 * The HTTP server: the API with its handlers and middleware, the OpenAPI document at
 * `/v1/openapi.json` and a docs page rendering it at `/docs` (gzipped when accepted), on a Node
 * HTTP server.
 */
import {
  Etag,
  FileSystem,
  HttpApi,
  HttpApiBuilder,
  HttpApiScalar,
  HttpIncomingMessage,
  HttpMiddleware,
  HttpPlatform,
  HttpServer,
  HttpServerRequest,
  HttpServerResponse,
  Path
} from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Chunk, Context, Effect, Layer, Option } from "effect"
import { createServer, type Server } from "node:http"
import * as NodeZlib from "node:zlib"
import { AgentsHandlers } from "./agents/Http.js"
import { AlertsHandlers } from "./alerts/Http.js"
import { Api } from "./Api.js"
import { BillingHandlers } from "./billing/Http.js"
import { EnvironmentsHandlers } from "./environments/Http.js"
import { makeForwardProxy, withForwarding } from "./hosts/ForwardProxy.js"
import { ApiKeysHandlers } from "./identity/ApiKeysHttp.js"
import { DeviceHandlers } from "./identity/DeviceHttp.js"
import { AuthHandlers } from "./identity/Http.js"
import { AppConfig } from "./kernel/config/AppConfig.js"
import { acceptsGzip } from "./kernel/http/AcceptEncoding.js"
import { AuthorizationLive } from "./kernel/http/AuthorizationLive.js"
import { AccessLog, edge, maxBodySizeLayer, ProblemsLive, routeIndex } from "./kernel/http/RequestEdge.js"
import { buildWithOnly } from "./kernel/Narrow.js"
import { Durability } from "./kernel/sql/Durability.js"
import { LimitsHandlers } from "./limits/Http.js"
import { MachinesHandlers } from "./machines/Http.js"
import { MetricsHandlers } from "./metrics/Http.js"
import { OperationsHandlers } from "./operations/Http.js"
import { OperatorHandlers } from "./operator/Http.js"
import { InvitationsHandlers, MembersHandlers } from "./organizations/Http.js"
import { PagesLive } from "./pages/Live.js"
import { PortsHandlers } from "./ports/Http.js"
import { makePortProxy, withPortProxy } from "./ports/Proxy.js"
import { ChunkRoutesLive } from "./snapshots/ChunkRoutes.js"
import { SnapshotsHandlers } from "./snapshots/Http.js"
import { TerminalsHandlers } from "./terminals/Http.js"
import { makeTerminalSockets, withTerminalSockets } from "./terminals/Socket.js"
import { WebhooksHandlers } from "./webhooks/Http.js"

export { acceptsGzip }

export const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    AuthHandlers,
    DeviceHandlers,
    ApiKeysHandlers,
    MembersHandlers,
    InvitationsHandlers,
    MachinesHandlers,
    OperationsHandlers,
    LimitsHandlers,
    EnvironmentsHandlers,
    SnapshotsHandlers,
    PortsHandlers,
    AgentsHandlers,
    WebhooksHandlers,
    MetricsHandlers,
    OperatorHandlers,
    AlertsHandlers,
    BillingHandlers,
    TerminalsHandlers
  ]),
  Layer.provide(AuthorizationLive(Api))
)

/**
 * The docs page at `/docs`: Scalar rendering the OpenAPI document, about 3.5 MB of HTML with its
 * script inline, so it is served gzipped (about a tenth) to clients that accept it. The page is
 * Scalar's own (HttpApiScalar), made once in a router of its own and read back; it is compressed
 * at the first request that wants it, once. It loads nothing from outside svc (test/pages/docs.test.ts).
 */
const DocsLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const api = yield* HttpApi.Api
    const scalar = yield* Effect.scoped(Effect.gen(function*() {
      const built = yield* Layer.build(
        // Scalar's default fonts come from fonts.scalar.com: the page uses the system's instead, so
        // reading the reference tells no third party who reads it (issue 31, item 7).
        HttpApiScalar.layer({ path: "/docs", scalar: { withDefaultFonts: false } }).pipe(
          Layer.provideMerge(HttpApiBuilder.Router.Live),
          Layer.provide(Layer.succeed(HttpApi.Api, api))
        )
      )
      const routes = (yield* Context.get(built, HttpApiBuilder.Router).router).routes
      const route = Chunk.findFirst(routes, (candidate) => candidate.path === "/docs")
      if (Option.isNone(route)) return yield* Effect.dieMessage("HttpApiScalar made no /docs route")
      return yield* (route.value.handler as Effect.Effect<HttpServerResponse.HttpServerResponse>)
    }))
    if (scalar.body._tag !== "Uint8Array") return yield* Effect.dieMessage("the docs page is not a byte body")
    const page = scalar.body.body
    const contentType = scalar.body.contentType
    const gzipped = yield* Effect.cached(
      Effect.async<Uint8Array>((resume) =>
        NodeZlib.gzip(page, (error, bytes) => resume(error === null ? Effect.succeed(bytes) : Effect.die(error)))
      )
    )
    yield* router.get(
      "/docs",
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        acceptsGzip(request.headers["accept-encoding"])
          ? Effect.map(gzipped, (bytes) =>
            HttpServerResponse.uint8Array(bytes, {
              contentType,
              headers: { "content-encoding": "gzip", vary: "accept-encoding" }
            }))
          : Effect.succeed(HttpServerResponse.uint8Array(page, { contentType, headers: { vary: "accept-encoding" } })))
    )
  })
)

/** The routes and their middleware, ready to serve on any HttpServer. */
export const RoutesLive = Layer.unwrapEffect(
  Effect.map(
    Effect.all([AppConfig, Durability, AccessLog]),
    ([config, durability, accessLog]) =>
      HttpApiBuilder.serve(
        edge(config.maxBodyBytes, durability, {
          routeOf: routeIndex(Api),
          logLevel: config.logLevel,
          accessLog: accessLog.write,
          trustedProxies: config.trustedProxies
        })
      ).pipe(
        // Requests run in the serve layer's context: what the server and router need, not the app's services.
        buildWithOnly(
          HttpServer.HttpServer,
          HttpApi.Api,
          HttpPlatform.HttpPlatform,
          Etag.Generator,
          FileSystem.FileSystem,
          Path.Path,
          HttpIncomingMessage.MaxBodySize
        ),
        Layer.provide(DocsLive),
        Layer.provide(PagesLive),
        // Node-to-node only, outside the API and its OpenAPI document.
        Layer.provide(ChunkRoutesLive),
        Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/v1/openapi.json" })),
        Layer.provide(ProblemsLive),
        Layer.provide(ApiLive),
        Layer.provide(maxBodySizeLayer(config.maxBodyBytes)),
        // Nothing exports spans, and the tracer middleware made one per request (URL parsing,
        // headers redacted and copied into attributes, a context with the span as parent).
        HttpMiddleware.withTracerDisabledWhen(() => true)
      )
  )
)

/**
 * Stopping the server waits for the answers in flight for up to `drainMillis`, then drops the
 * connections still open (a half-sent request, an event stream, a proxied socket): Node's close
 * waits for every one of them, so one client could hold svc's shutdown after SIGTERM forever.
 */
const drainMillis = 5_000

const closingWithin = (server: Server) => {
  const close = server.close.bind(server)
  server.close = (callback) => {
    setTimeout(() => server.closeAllConnections(), drainMillis).unref()
    return close(callback)
  }
  return server
}

/**
 * A Node HTTP server on `host` and `port` whose port proxy requests and upgrades go to the port
 * proxy (src/ports/Proxy.ts), and terminal WebSockets to src/terminals/Socket.ts, before the
 * Effect app sees them. The proxy looks first: on a port's own origin (`SVC_PORTS_URL`) every
 * path is the machine's, none is svc's. Before all of them, a request that needs another host's
 * node goes there (src/kernel/http/ForwardProxy.ts).
 */
export const nodeServerOn = (options: { readonly host: string; readonly port: number }) =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.all([makePortProxy, makeTerminalSockets, makeForwardProxy]),
      ([proxy, terminals, forwarding]) =>
        NodeHttpServer.layer(
          () =>
            closingWithin(
              withForwarding(withPortProxy(withTerminalSockets(createServer(), terminals), proxy), forwarding)
            ),
          options
        )
    )
  )

/** A Node HTTP server listening where the configuration says. */
export const NodeServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => nodeServerOn({ host: config.host, port: config.port }))
)

export const HttpLive = RoutesLive.pipe(HttpServer.withLogAddress, Layer.provide(NodeServerLive))
