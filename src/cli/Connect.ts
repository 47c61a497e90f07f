/**
 * How every remote command reaches svc: the URL and API key from `SVC_URL` / `SVC_API_KEY`, else the
 * stored config (`svc login`), and the typed client (src/client) made from them, so the CLI speaks
 * exactly the API the server implements, with its retries (reads freely, changes with one
 * idempotency key per call).
 */
import { Effect } from "effect"
import { Api } from "../Api.js"
import { type Client, makeClient } from "../client/Client.js"
import type { RetryNotice } from "../client/Retry.js"
import { type BadConfigFile, readConfig } from "./ConfigFile.js"
import { UsageError } from "./Failure.js"

export const defaultUrl = "http://127.0.0.1:8080"

const env = (name: string) => {
  const value = process.env[name]
  return value === undefined || value === "" ? undefined : value
}

/** `SVC_URL`, else the stored URL, else the local default; without a trailing slash. */
export const serverUrl = Effect.map(
  readConfig,
  (stored) => (env("SVC_URL") ?? stored.url ?? defaultUrl).replace(/\/+$/, "")
)

/** A retry is said on stderr, so a wait never looks like a hang (stdout stays the answer's). */
export const sayRetrying = (notice: RetryNotice) =>
  Effect.sync(() => {
    const seconds = (notice.delayMillis / 1000).toFixed(1)
    process.stderr.write(
      `svc: ${notice.method} ${notice.url}: ${notice.reason}; retry ${notice.retry} of ${notice.retries} in ${seconds} s\n`
    )
  })

export interface Connection {
  readonly url: string
  readonly apiKey: string
  readonly client: Client
}

/** The client for the signed-in key; without one, a usage error saying how to get one. */
export const connect: Effect.Effect<Connection, UsageError | BadConfigFile> = Effect.gen(
  function*() {
    const stored = yield* readConfig
    const url = yield* serverUrl
    const apiKey = env("SVC_API_KEY") ?? stored.api_key
    if (apiKey === undefined) {
      return yield* new UsageError({ message: "not signed in: run `svc login` or set SVC_API_KEY" })
    }
    const client = yield* makeClient({ baseUrl: url, apiKey, retry: { onRetry: sayRetrying } })
    return { url, apiKey, client }
  }
)

/**
 * A route's path with its parameters filled in, from the API definition (`group.endpoint`), for the
 * few answers the typed client does not read (streams, RFC 8628 errors): they cannot drift either.
 */
export const routePath = (group: string, endpoint: string, params: Record<string, string>) => {
  const groups = (Api as unknown as { groups: Record<string, { endpoints: Record<string, { path: string }> }> }).groups
  const path = groups[group]!.endpoints[endpoint]!.path
  return path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(params[name]!))
}
