import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { iso } from "../kernel/http/Dto.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { toDto } from "./ApiKeysHttp.js"
import { onResponse } from "./Cookies.js"
import { deviceTokenMembers } from "./DeviceApi.js"
import { DeviceGrant, DeviceTokenFailure } from "./DeviceGrant.js"

/** Codes and keys must not be kept by caches (RFC 6749 §5.1, RFC 8628 §3.5). */
const noStore = onResponse(HttpServerResponse.setHeader("cache-control", "no-store"))

const member = (value: unknown, name: string) =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[name] : undefined

/** A member the poll does not know (a typo is never ignored), if any. */
const unknownMember = (value: unknown) =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? Object.keys(value).find((name) => !(deviceTokenMembers as ReadonlyArray<string>).includes(name))
    : undefined

export const DeviceHandlers = HttpApiBuilder.group(Api, "device", (handlers) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const grant = yield* DeviceGrant
    const verificationUri = `${config.uiUrl}/device`
    return handlers
      .handle("code", ({ payload, request }) =>
        Effect.gen(function*() {
          yield* noStore
          const client = Option.getOrElse(request.remoteAddress, () => "unknown")
          const issued = yield* grant.request(payload.client_name, payload.scope, client)
          return {
            device_code: issued.deviceCode,
            user_code: issued.userCode,
            verification_uri: verificationUri,
            verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(issued.userCode)}`,
            expires_in: issued.expiresIn,
            interval: issued.interval
          }
        }))
      .handle("token", ({ payload }) =>
        Effect.gen(function*() {
          yield* noStore
          const extra = unknownMember(payload)
          const polled = yield* Effect.either(
            extra === undefined
              ? grant.poll(member(payload, "device_code"), member(payload, "grant_type"))
              : Effect.fail(
                new DeviceTokenFailure({ error: "invalid_request", description: `Unknown member ${extra}` })
              )
          )
          // RFC 8628's error shape is answered as it is, not as problem details (src/kernel/http/Problems.ts).
          if (polled._tag === "Left") {
            return HttpServerResponse.unsafeJson(
              { error: polled.left.error, error_description: polled.left.description },
              { status: 400 }
            )
          }
          const { expiresInSeconds, key } = polled.right
          return {
            access_token: key.secret,
            token_type: "Bearer" as const,
            expires_in: expiresInSeconds,
            scope: key.row.preset,
            api_key: toDto(key.row)
          }
        }))
      .handle("describe", ({ urlParams }) =>
        Effect.gen(function*() {
          const user = yield* currentUser
          const { row, userCode } = yield* grant.describe(user.id, urlParams.user_code)
          return {
            client_name: row.client_name,
            requested_scope: row.requested_scope,
            user_code: userCode,
            expires_at: iso(row.expires_at)
          }
        }))
      .handle("approve", ({ payload }) =>
        Effect.gen(function*() {
          const user = yield* currentUser
          const organization = yield* currentOrganization
          const approved = yield* grant.approve(user.id, organization.id, {
            userCode: payload.user_code,
            expiresInDays: payload.expires_in_days,
            name: payload.name,
            preset: payload.preset
          })
          return {
            user_code: approved.userCode,
            organization_id: approved.organizationId,
            preset: approved.preset,
            expires_in_days: approved.expiresInDays
          }
        }))
      .handle("deny", ({ payload }) =>
        Effect.gen(function*() {
          const user = yield* currentUser
          const organization = yield* currentOrganization
          yield* grant.deny(user.id, organization.id, payload.user_code)
        }))
  })).pipe(buildWithOnly(Authorization, AppConfig, DeviceGrant))
