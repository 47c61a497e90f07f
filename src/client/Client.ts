/**
 * The typed client of a running svc: every route of the API (src/Api.ts), errors decoded into their
 * classes, request bodies and query strings in their wire form (src/client/Wire.ts: fields with
 * server defaults may be left out), retries (src/client/Retry.ts), and
 * `waitOperation` to follow a 202 to its outcome.
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Clock, Data, Duration, Effect } from "effect"
import { Api } from "../Api.js"
import type { OperationDto } from "../operations/Api.js"
import { defaultRetryPolicy, type RetryPolicy, withIdempotencyKey, withRetries } from "./Retry.js"
import { wireApi, type WireClient, withOptionalParts } from "./Wire.js"

export interface ClientOptions {
  readonly baseUrl: string
  /** An `svc_...` API key; it also fixes the organization. */
  readonly apiKey?: string
  /** How requests are retried (docs/operations.md, "Clients"); `false` sends each request once. */
  readonly retry?: Partial<RetryPolicy> | false
}

/** The statuses after which an operation changes no more (docs/operations.md). */
export const terminalStatuses: ReadonlySet<OperationDto["status"]> = new Set([
  "succeeded",
  "failed",
  "correlation_miss"
])

export interface WaitOptions {
  /** The first pause between two reads; each pause is twice the one before, up to `maxInterval`. */
  readonly interval?: Duration.DurationInput
  readonly maxInterval?: Duration.DurationInput
  /** How long to wait in all before failing with `WaitTimeout`; the operation itself goes on. */
  readonly timeout?: Duration.DurationInput
  /** Called with every read of the operation, the last (terminal) one included: a progress display. */
  readonly observe?: (operation: OperationDto) => Effect.Effect<void>
}

/** A client waits for an operation polling every 250 ms, growing to 2 s, up to 10 minutes. */
export const defaultWait = { interval: "250 millis", maxInterval: "2 seconds", timeout: "10 minutes" } as const

/** The wait ended before the operation did. A wait that times out does not cancel the operation. */
export class WaitTimeout extends Data.TaggedError("WaitTimeout")<{
  readonly operation_id: string
  readonly last: OperationDto
}> {
  override get message() {
    return `operation ${this.operation_id} is still ${this.last.status}`
  }
}

const clientApi = wireApi(Api)

type Routes = WireClient<typeof Api>
type ReadOperationError = Effect.Effect.Error<ReturnType<Routes["operations"]["get"]>>

/** The typed client: a group per area (`svc.machines.create(...)`), and `waitOperation`. */
export type Client = Routes & {
  /**
   * Reads the operation until it is `succeeded`, `failed` or `correlation_miss` and answers it;
   * fails with `WaitTimeout` once `timeout` has passed (the operation goes on).
   */
  readonly waitOperation: (
    operation: string | { readonly operation_id: string },
    wait?: WaitOptions
  ) => Effect.Effect<OperationDto, WaitTimeout | ReadOperationError>
}

/** A typed client for a running svc: every route of the API plus `waitOperation`. */
export const makeClient = (options: ClientOptions): Effect.Effect<Client> =>
  Effect.gen(function*() {
    const policy = options.retry === false
      ? { ...defaultRetryPolicy, retries: 0 }
      : { ...defaultRetryPolicy, ...options.retry }
    const generated = yield* HttpApiClient.make(clientApi, {
      baseUrl: options.baseUrl,
      transformClient: (client) =>
        client.pipe(
          HttpClient.mapRequest((request) =>
            options.apiKey === undefined ? request : HttpClientRequest.bearerToken(request, options.apiKey)
          ),
          withRetries(policy),
          // Outside the retries, so every attempt of one call carries the same key.
          withIdempotencyKey
        )
    })
    const routes = withOptionalParts<Routes>(generated as any)

    const waitOperation: Client["waitOperation"] = (operation, wait = {}) =>
      Effect.gen(function*() {
        const id = typeof operation === "string" ? operation : operation.operation_id
        const maxInterval = Duration.toMillis(wait.maxInterval ?? defaultWait.maxInterval)
        const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(wait.timeout ?? defaultWait.timeout)
        let interval = Duration.toMillis(wait.interval ?? defaultWait.interval)
        while (true) {
          const current = yield* routes.operations.get({ path: { id } })
          if (wait.observe !== undefined) yield* wait.observe(current)
          if (terminalStatuses.has(current.status)) return current
          const left = deadline - (yield* Clock.currentTimeMillis)
          if (left <= 0) return yield* new WaitTimeout({ operation_id: id, last: current })
          yield* Effect.sleep(Math.min(interval, left))
          interval = Math.min(interval * 2, maxInterval)
        }
      })

    return { ...routes, waitOperation }
  }).pipe(Effect.provide(FetchHttpClient.layer))
