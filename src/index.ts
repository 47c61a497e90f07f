/**
 * svc as a library. Programs embed the whole service as a layer, or talk to a running one through
 * the typed client derived from the same `HttpApi` definition the server implements:
 *
 * ```ts
 * import { makeClient } from "svc"
 * const svc = yield* makeClient({ baseUrl: "http://127.0.0.1:8080", apiKey })
 * const me = yield* svc.members.me()
 * ```
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "./Api.js"

export { Api } from "./Api.js"
export { AppLive, ServicesLive } from "./App.js"
export { RoutesLive } from "./Http.js"
export { AppConfig, type AppConfigShape, layer as AppConfigFromEnv } from "./kernel/config/AppConfig.js"
export * as Errors from "./kernel/http/Errors.js"

export interface ClientOptions {
  readonly baseUrl: string
  /** An `svc_...` API key; it also fixes the organization. */
  readonly apiKey?: string
}

/** A typed client for a running svc: every route of the API, errors decoded into their classes. */
export const makeClient = (options: ClientOptions) =>
  HttpApiClient.make(Api, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest((request) =>
      options.apiKey === undefined ? request : HttpClientRequest.bearerToken(request, options.apiKey)
    )
  }).pipe(Effect.provide(FetchHttpClient.layer))
