/**
 * svc as a library: the typed client of a running svc (as Promises: `createClient`; as Effects: `makeClient`), derived from the same `HttpApi` definition
 * the server implements. It loads none of the server (no SQLite, no drivers); the service itself, to
 * embed as a layer, is `svc/server` (src/server.ts).
 *
 * ```ts
 * import { makeClient } from "svc"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const svc = yield* makeClient({ baseUrl: "http://127.0.0.1:8080", apiKey })
 *   const accepted = yield* svc.machines.create({ payload: { name: "first" } })
 *   yield* svc.waitOperation(accepted)
 *   const exec = yield* svc.machines.exec({ path: { id: accepted.machine_id }, payload: { shell: "uname -a" } })
 *   const done = yield* svc.waitOperation(exec)
 *   console.log(Buffer.from(done.exec_result!.stdout_base64, "base64").toString())
 * })
 * Effect.runPromise(program)
 * ```
 *
 * Request bodies and query strings take their wire form (what the OpenAPI document shows); fields with
 * server defaults may be left out. Reads are retried on connection errors and 408, 429, 502, 503,
 * 504; changes on 429 and 503 with the same idempotency key, honouring `Retry-After`.
 */
export { Api } from "./Api.js"
export {
  type Client,
  type ClientOptions,
  defaultWait,
  makeClient,
  terminalStatuses,
  type WaitOptions,
  WaitTimeout
} from "./client/Client.js"
export {
  createClient,
  type CreateClientOptions,
  type PromiseClient,
  type PromiseRoutes,
  type WaitFor
} from "./client/Promise.js"
export { defaultRetryPolicy, type RetryPolicy } from "./client/Retry.js"
export { type ServerEvent, StreamError } from "./client/ServerEvents.js"
export * as Errors from "./kernel/http/Errors.js"
