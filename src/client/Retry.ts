/**
 * The retry rule of the API (docs/operations.md, "Clients: waiting and retrying"), as a wrapper of an HttpClient:
 *
 * - reads (GET, HEAD) are retried on connection errors and on 408, 429, 502, 503 and 504;
 * - mutations only on 429 and 503 (the server did not act), with the same request, so the same
 *   `Idempotency-Key` (`withIdempotencyKey` gives every mutation one before the first attempt);
 * - a `Retry-After` answer (seconds or an HTTP date) is waited for; without one the wait doubles from
 *   `baseDelay` up to `maxDelay`, give or take a fifth. A `Retry-After` longer than `maxRetryAfter`
 *   is not waited for: the answer goes back to the caller as it came;
 * - a connection refused by a loopback address (nothing listens on this host: svc is not running)
 *   is retried once, not `retries` times: waiting longer would only hide what is wrong;
 * - before each wait, `onRetry` hears why and for how long (the CLI prints it).
 *
 * Waits read the Effect Clock, so a test moves them with the TestClock.
 */
import { HttpClient, type HttpClientError, HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import { Clock, Duration, Effect, Random } from "effect"

export interface RetryPolicy {
  /** Retries after the first attempt; 0 turns retrying off. */
  readonly retries: number
  readonly baseDelay: Duration.DurationInput
  readonly maxDelay: Duration.DurationInput
  /** The longest `Retry-After` waited for. */
  readonly maxRetryAfter: Duration.DurationInput
  /** Told before each wait for a retry. */
  readonly onRetry?: ((notice: RetryNotice) => Effect.Effect<void>) | undefined
}

/** Why a request is about to be retried, and when. */
export interface RetryNotice {
  readonly method: string
  readonly url: string
  /** `the server answered 503`, `connection refused (ECONNREFUSED)`. */
  readonly reason: string
  /** This retry's number, from 1, and how many may follow the first attempt at most. */
  readonly retry: number
  readonly retries: number
  readonly delayMillis: number
}

export const defaultRetryPolicy: RetryPolicy = {
  retries: 5,
  baseDelay: "500 millis",
  maxDelay: "10 seconds",
  maxRetryAfter: "2 minutes"
}

const readMethods = new Set(["GET", "HEAD", "OPTIONS"])
const readStatuses = new Set([408, 429, 502, 503, 504])
const mutationStatuses = new Set([429, 503])

export const isRead = (method: string) => readMethods.has(method)

/** Whether an answer with this status may be retried for this method. */
export const retryableStatus = (method: string, status: number) =>
  (isRead(method) ? readStatuses : mutationStatuses).has(status)

/** A connection that failed before any answer (refused, reset, DNS): retried for reads only. */
const retryableError = (method: string, error: HttpClientError.HttpClientError) =>
  isRead(method) && error._tag === "RequestError" && error.reason === "Transport"

/** The first error code (`ECONNREFUSED`) along a transport error's causes. */
const codeOf = (error: unknown): string | undefined => {
  for (let cause = error; typeof cause === "object" && cause !== null; cause = (cause as { cause?: unknown }).cause) {
    const code = (cause as { code?: unknown }).code
    if (typeof code === "string") return code
  }
  return undefined
}

const loopback = (url: string) => {
  try {
    const host = new URL(url).hostname
    return host === "localhost" || host === "[::1]" || host === "::1" || /^127\./.test(host)
  } catch {
    return false
  }
}

/** `Retry-After` in milliseconds from now: delta seconds or an HTTP date; undefined when absent or unreadable. */
export const retryAfterMillis = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

const backoff = (policy: RetryPolicy, retry: number) =>
  Effect.map(
    Random.nextRange(0.8, 1.2),
    (jitter) => Math.min(Duration.toMillis(policy.maxDelay), Duration.toMillis(policy.baseDelay) * 2 ** retry) * jitter
  )

/** Every mutation gets an `Idempotency-Key` before its first attempt (unless the caller gave one), so retries repeat it. */
export const withIdempotencyKey = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.mapRequest(client, (request) =>
    isRead(request.method) || request.headers["idempotency-key"] !== undefined
      ? request
      : HttpClientRequest.setHeader(request, "idempotency-key", crypto.randomUUID()))

/** Retries `client`'s requests by the rule above. */
export const withRetries = (policy: RetryPolicy = defaultRetryPolicy) => (client: HttpClient.HttpClient) =>
  HttpClient.transform(client, (execute, request) => {
    const method = request.method
    const wait = (retry: number, retries: number, reason: string, millis: number) =>
      policy.onRetry === undefined
        ? Effect.sleep(millis)
        : Effect.zipRight(
          policy.onRetry({ method, url: request.url, reason, retry: retry + 1, retries, delayMillis: millis }),
          Effect.sleep(millis)
        )
    const attempt = (
      retry: number
    ): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> =>
      Effect.matchEffect(execute, {
        onFailure: (error) => {
          if (!retryableError(method, error)) return Effect.fail(error)
          const code = codeOf(error.cause)
          const refusedHere = code === "ECONNREFUSED" && loopback(request.url)
          const retries = refusedHere ? Math.min(policy.retries, 1) : policy.retries
          if (retry >= retries) return Effect.fail(error)
          const reason = code === "ECONNREFUSED"
            ? "connection refused (ECONNREFUSED)"
            : `cannot connect (${code ?? "transport error"})`
          return Effect.flatMap(
            backoff(policy, retry),
            (millis) => Effect.zipRight(wait(retry, retries, reason, millis), attempt(retry + 1))
          )
        },
        onSuccess: (response) => {
          if (retry >= policy.retries || !retryableStatus(method, response.status)) return Effect.succeed(response)
          return Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const asked = retryAfterMillis(response.headers["retry-after"], now)
            if (asked !== undefined && asked > Duration.toMillis(policy.maxRetryAfter)) return response
            // The answer is dropped: read its body so the connection is free for the next attempt.
            yield* Effect.ignore(response.arrayBuffer)
            const millis = asked ?? (yield* backoff(policy, retry))
            yield* wait(retry, policy.retries, `the server answered ${response.status}`, millis)
            return yield* attempt(retry + 1)
          })
        }
      })
    return attempt(0)
  })
