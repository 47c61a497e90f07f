/**
 * The client for programs that do not use Effect: the same typed routes as `makeClient`
 * (src/client/Client.ts, the same retries and wire forms), each call a Promise, an error answer a
 * thrown error of the API's error class (`error._tag`, `error.status` from the problem details);
 * `wait` follows a 202 to its outcome and `events` reads the event streams as async iterators.
 *
 * ```ts
 * const svc = createClient({ url: "http://127.0.0.1:8080", apiKey: process.env.SVC_API_KEY })
 * const accepted = await svc.machines.create({ payload: { name: "web" } })
 * await svc.wait(accepted)
 * ```
 */
import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Cause, Effect, Exit, Option } from "effect"
import type { Simplify } from "effect/Types"
import { Api } from "../Api.js"
import type { OperationDto } from "../operations/Api.js"
import { type Client, type ClientOptions, makeClient, type WaitOptions } from "./Client.js"
import { readEvents, type ServerEvent } from "./ServerEvents.js"
import type { WireRequest } from "./Wire.js"

/** One route as a function answering a Promise of its success. */
export type PromiseMethod<Endpoint> = [Endpoint] extends [
  HttpApiEndpoint.HttpApiEndpoint<
    infer _Name,
    infer _Method,
    infer Path,
    infer UrlParams,
    infer Payload,
    infer Headers,
    infer Success,
    infer _Error,
    infer _R,
    infer _RE
  >
] ? (request: Simplify<WireRequest<Path, UrlParams, Payload, Headers, false>>) => Promise<Success>
  : never

type ApiGroups = typeof Api extends HttpApi.HttpApi<infer _Id, infer G, infer _E, infer _R> ? G : never

/** Every group of the API (`svc.machines`, `svc.environments`, ...), each route a Promise method. */
export type PromiseRoutes = {
  readonly [Group in Extract<ApiGroups, { readonly topLevel: false }> as HttpApiGroup.HttpApiGroup.Name<Group>]:
    Group extends HttpApiGroup.HttpApiGroup<infer _GroupId, infer Endpoints, infer _GroupError, infer _GroupR> ? {
        readonly [Endpoint in Endpoints as HttpApiEndpoint.HttpApiEndpoint.Name<Endpoint>]: PromiseMethod<Endpoint>
      }
      : never
}

export interface CreateClientOptions {
  /** The svc server, such as `http://127.0.0.1:8080`. */
  readonly url: string
  /** An `svc_...` API key; it also fixes the organization. */
  readonly apiKey?: string
  /** How requests are retried (docs/operations.md, "Clients"); `false` sends each request once. */
  readonly retry?: ClientOptions["retry"]
}

export interface WaitFor {
  /** How long to wait in all (ms, default 10 minutes); the operation itself goes on after. */
  readonly timeoutMillis?: number
  /** Called with every read of the operation, the last one included. */
  readonly onProgress?: (operation: OperationDto) => void
}

export type PromiseClient = PromiseRoutes & {
  /**
   * Reads the operation (an id, or a 202's answer) until it is `succeeded`, `failed` or
   * `correlation_miss`, and answers it; throws `WaitTimeout` once the timeout has passed.
   */
  readonly wait: (operation: string | { readonly operation_id: string }, options?: WaitFor) => Promise<OperationDto>
  readonly events: {
    /** An operation's events (`status`, `output`, `progress`, and `end`), history first. */
    readonly operation: (id: string, options?: { readonly signal?: AbortSignal }) => AsyncGenerator<ServerEvent>
    /** A conversation's `agent` events from `cursor`, ending with `idle`. */
    readonly agent: (
      machineId: string,
      conversationId: string,
      options?: { readonly cursor?: number; readonly signal?: AbortSignal }
    ) => AsyncGenerator<ServerEvent>
  }
  /** The same client as Effects (`makeClient`), for code that uses Effect. */
  readonly effect: Client
}

/** Runs a call; a failure rejects with the error itself (the API's error class), not a wrapper. */
const run = <A>(effect: Effect.Effect<A, unknown>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    throw Option.isSome(failure) ? failure.value : Cause.squash(exit.cause)
  })

const pathOf = (group: string, endpoint: string, params: Record<string, string>) => {
  const groups = (Api as unknown as { groups: Record<string, { endpoints: Record<string, { path: string }> }> }).groups
  return groups[group]!.endpoints[endpoint]!.path.replace(
    /:(\w+)/g,
    (_, name: string) => encodeURIComponent(params[name]!)
  )
}

/** The Promise client of a running svc. */
export const createClient = (options: CreateClientOptions): PromiseClient => {
  const baseUrl = options.url.replace(/\/+$/, "")
  const client = Effect.runSync(
    makeClient({
      baseUrl,
      ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
      ...(options.retry === undefined ? {} : { retry: options.retry })
    })
  )
  const routes = Object.fromEntries(
    Object.entries(client as unknown as Record<string, unknown>)
      .filter(([, group]) => typeof group === "object" && group !== null)
      .map(([name, group]) => [
        name,
        Object.fromEntries(
          Object.entries(group as Record<string, (request?: object) => Effect.Effect<unknown, unknown>>).map((
            [method, call]
          ) => [method, (request?: object) => run(call(request))])
        )
      ])
  ) as unknown as PromiseRoutes
  const auth: Record<string, string> = options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }
  const wait: PromiseClient["wait"] = (operation, waitFor = {}) => {
    const observe = waitFor.onProgress
    const waitOptions: WaitOptions = {
      ...(waitFor.timeoutMillis === undefined ? {} : { timeout: waitFor.timeoutMillis }),
      ...(observe === undefined ? {} : { observe: (op: OperationDto) => Effect.sync(() => observe(op)) })
    }
    return run(client.waitOperation(operation, waitOptions))
  }
  return {
    ...routes,
    wait,
    events: {
      operation: (id, streamOptions = {}) =>
        readEvents(baseUrl + pathOf("operations", "events", { id }), auth, streamOptions),
      agent: (machineId, conversationId, streamOptions = {}) =>
        readEvents(
          `${baseUrl}${pathOf("agents", "events", { id: machineId })}?${new URLSearchParams({
            conversation_id: conversationId,
            cursor: String(streamOptions.cursor ?? 0)
          })}`,
          auth,
          streamOptions
        )
    },
    effect: client
  }
}
