/**
 * The HTTP server: the API with its handlers and middleware, the OpenAPI document at
 * `/v1/openapi.json` and a docs page rendering it at `/docs`, on a Node HTTP server.
 */
import { HttpApiBuilder, HttpApiScalar, HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AgentsHandlers } from "./agents/Http.js"
import { Api } from "./Api.js"
import { EnvironmentsHandlers } from "./environments/Http.js"
import { ApiKeysHandlers } from "./identity/ApiKeysHttp.js"
import { AuthHandlers } from "./identity/Http.js"
import { AppConfig } from "./kernel/config/AppConfig.js"
import { AuthorizationLive } from "./kernel/http/AuthorizationLive.js"
import { edge, maxBodySizeLayer, ProblemsLive, routeIndex } from "./kernel/http/RequestEdge.js"
import { Durability } from "./kernel/sql/Durability.js"
import { LimitsHandlers } from "./limits/Http.js"
import { MachinesHandlers } from "./machines/Http.js"
import { OperationsHandlers } from "./operations/Http.js"
import { MembersHandlers } from "./organizations/Http.js"
import { makePortProxy, withPortProxy } from "./ports/Proxy.js"
import { SnapshotsHandlers } from "./snapshots/Http.js"

export const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    AuthHandlers,
    ApiKeysHandlers,
    MembersHandlers,
    MachinesHandlers,
    OperationsHandlers,
    LimitsHandlers,
    EnvironmentsHandlers,
    SnapshotsHandlers,
    AgentsHandlers
  ]),
  Layer.provide(AuthorizationLive(Api))
)

/** The routes and their middleware, ready to serve on any HttpServer. */
export const RoutesLive = Layer.unwrapEffect(
  Effect.map(
    Effect.all([AppConfig, Durability]),
    ([config, durability]) =>
      HttpApiBuilder.serve(
        edge(config.maxBodyBytes, durability, { routeOf: routeIndex(Api), logLevel: config.logLevel })
      ).pipe(
        Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
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
 * A Node HTTP server on `host` and `port` whose port proxy requests and upgrades go to the port
 * proxy (src/ports/Proxy.ts) before the Effect app sees them.
 */
export const nodeServerOn = (options: { readonly host: string; readonly port: number }) =>
  Layer.unwrapEffect(
    Effect.map(makePortProxy, (proxy) => NodeHttpServer.layer(() => withPortProxy(createServer(), proxy), options))
  )

/** A Node HTTP server listening where the configuration says. */
export const NodeServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => nodeServerOn({ host: config.host, port: config.port }))
)

export const HttpLive = RoutesLive.pipe(HttpServer.withLogAddress, Layer.provide(NodeServerLive))
