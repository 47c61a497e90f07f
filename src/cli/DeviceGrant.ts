/**
 * The client side of the device authorization grant (RFC 8628) as svc serves it:
 * `POST /v1/auth/device/code` answers the codes; `POST /v1/auth/device/token` answers 400
 * `authorization_pending` until a person approved (then 200 with the key, exactly once), `slow_down`
 * when polled sooner than the interval (which grows by 5 s), `access_denied`, `expired_token`.
 * A 429 is waited out (`Retry-After`); a dropped connection is polled again at the next interval
 * (a poll changes nothing until the approval, so repeating it is safe).
 */
import { Effect, Schema } from "effect"
import { routePath } from "./Connect.js"
import { ApiProblem, CommandFailed } from "./Failure.js"

export const ApiKeyPresets = ["read_only", "use_existing", "create_and_use", "full_access"] as const

export const deviceCodePath = routePath("device", "code", {})
export const deviceTokenPath = routePath("device", "token", {})
export const deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

export const DeviceCode = Schema.Struct({
  device_code: Schema.String,
  user_code: Schema.String,
  verification_uri: Schema.String,
  verification_uri_complete: Schema.String,
  expires_in: Schema.Number,
  interval: Schema.Number
})
export type DeviceCode = typeof DeviceCode.Type

export const DeviceToken = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.String,
  expires_in: Schema.Number,
  scope: Schema.String,
  api_key: Schema.optional(Schema.Struct({
    id: Schema.String,
    organization_id: Schema.String,
    name: Schema.String
  }))
})
export type DeviceToken = typeof DeviceToken.Type

interface Answer {
  readonly status: number
  readonly body: unknown
  readonly retryAfter: string | null
}

const post = (url: string, body: unknown) =>
  Effect.tryPromise({
    try: async (signal): Promise<Answer> => {
      const response = await fetch(url, {
        method: "POST",
        signal,
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(body)
      })
      return {
        status: response.status,
        body: await response.json().catch(() => undefined),
        retryAfter: response.headers.get("retry-after")
      }
    },
    catch: (error) => new CommandFailed({ message: `cannot reach ${url}: ${describe(error)}` })
  })

const describe = (error: unknown): string => {
  let message = String(error)
  for (let cause = error as any; cause !== undefined && cause !== null; cause = cause.cause) {
    if (typeof cause.code === "string") return cause.code
    if (typeof cause.message === "string") message = cause.message
  }
  return message
}

const seconds = (value: string | null, fallback: number) =>
  value !== null && /^\d+$/.test(value.trim()) ? Number(value.trim()) : fallback

/** The codes to show; a 429 is waited out (at most three times). */
export const requestCode = (baseUrl: string, body: { readonly client_name?: string; readonly scope?: string }) =>
  Effect.gen(function*() {
    for (let attempt = 0;; attempt++) {
      const answer = yield* post(baseUrl + deviceCodePath, body)
      if (answer.status === 200) {
        return yield* Schema.decodeUnknown(DeviceCode)(answer.body).pipe(
          Effect.mapError(() => new CommandFailed({ message: `${baseUrl} answered the device code route oddly` }))
        )
      }
      if (answer.status === 429 && attempt < 3) {
        yield* Effect.sleep(`${seconds(answer.retryAfter, 5)} seconds`)
        continue
      }
      return yield* ApiProblem.fromAnswer(answer.status, answer.body)
    }
  })

/** Polls until the key comes, or the code is denied or expires (exit 1 with the RFC's error code). */
export const waitForKey = (baseUrl: string, code: DeviceCode) =>
  Effect.gen(function*() {
    let interval = code.interval
    const deadline = Date.now() + code.expires_in * 1000
    while (true) {
      yield* Effect.sleep(`${interval} seconds`)
      const answer = yield* Effect.either(
        post(baseUrl + deviceTokenPath, { device_code: code.device_code, grant_type: deviceGrantType })
      )
      if (answer._tag === "Left") {
        if (Date.now() > deadline) return yield* answer.left
        continue
      }
      const { body, retryAfter, status } = answer.right
      if (status === 200) {
        return yield* Schema.decodeUnknown(DeviceToken)(body).pipe(
          Effect.mapError(() => new CommandFailed({ message: `${baseUrl} answered the device token route oddly` }))
        )
      }
      const error = (body as { error?: unknown } | undefined)?.error
      if (status === 400 && error === "authorization_pending") continue
      if (status === 400 && error === "slow_down") {
        interval += 5
        continue
      }
      if (status === 429) {
        interval = Math.max(interval, seconds(retryAfter, interval))
        continue
      }
      return yield* ApiProblem.fromAnswer(status, body)
    }
  })
