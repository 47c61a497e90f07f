/** The device authorization grant's group (RFC 8628): the device's two routes and the approver's three. */
import { HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Preset, Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { RequestBody } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { RateLimited, ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"
import { RequestFormNote } from "../kernel/http/RequestForm.js"
import { ApiKeyDto } from "./Api.js"

export const DeviceCodeRequest = RequestBody({
  client_name: Schema.optional(Schema.NullOr(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64)))),
  scope: Schema.optional(Schema.NullOr(Preset))
})

export const DeviceCodeResponse = Schema.Struct({
  device_code: Schema.String,
  user_code: Schema.String,
  verification_uri: Schema.String,
  verification_uri_complete: Schema.String,
  expires_in: Schema.Int,
  interval: Schema.Int
})

export const deviceTokenErrorCodes = [
  "authorization_pending",
  "slow_down",
  "access_denied",
  "expired_token",
  "invalid_grant",
  "invalid_request",
  "unsupported_grant_type"
] as const

/** The members a token poll may carry: RFC 8628 §3.4 (`client_id` is accepted and not needed). */
export const deviceTokenMembers = ["device_code", "grant_type", "client_id"] as const

/**
 * Read loosely at the door on purpose: whatever the device sends is checked by the service and
 * answered in RFC 8628's shape (`invalid_request`, an unknown member included), never as problem
 * details.
 */
const DeviceTokenRequest = Schema.Unknown.annotations({
  identifier: "DeviceTokenRequest",
  jsonSchema: {
    type: "object",
    required: ["device_code", "grant_type"],
    additionalProperties: false,
    properties: {
      device_code: { type: "string" },
      grant_type: { type: "string", enum: ["urn:ietf:params:oauth:grant-type:device_code"] },
      client_id: { type: "string", description: "Accepted and not needed." }
    }
  }
})

export const DeviceTokenResponse = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.Literal("Bearer"),
  expires_in: Schema.Int,
  scope: Preset,
  api_key: ApiKeyDto
})

export const DeviceAuthorizationDto = Schema.Struct({
  client_name: Schema.String,
  requested_scope: Preset,
  user_code: Schema.String,
  expires_at: Schema.String
})

const UserCode = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))

export const DeviceApproveRequest = RequestBody({
  user_code: UserCode,
  expires_in_days: Schema.optional(Schema.NullOr(Schema.Int.pipe(Schema.between(1, 90)))),
  name: Schema.optional(Schema.NullOr(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64)))),
  preset: Schema.optional(Schema.NullOr(Preset))
})

export const DeviceApproved = Schema.Struct({
  user_code: Schema.String,
  organization_id: Schema.String,
  preset: Preset,
  expires_in_days: Schema.Int
})

const tokenErrorResponse = {
  "400": {
    description: "DeviceTokenError (RFC 8628, not problem details): `error` is one of " +
      deviceTokenErrorCodes.map((code) => `\`${code}\``).join(", ") + "; sent with `Cache-Control: no-store`.",
    content: {
      "application/json": {
        schema: {
          type: "object",
          required: ["error", "error_description"],
          properties: {
            error: { type: "string", enum: [...deviceTokenErrorCodes] },
            error_description: { type: "string" }
          }
        }
      }
    }
  }
}

export class DeviceApi extends HttpApiGroup.make("device")
  .add(
    Endpoint.post("code", "/v1/auth/device/code", {
      summary: "Start a device sign-in",
      description: "A device (the CLI) asks for a code pair: show `user_code` and `verification_uri` to the person, " +
        "then poll the token route every `interval` seconds until `expires_in` (600 s) passes. `client_name` " +
        "defaults to `svc CLI`, `scope` (the preset asked for) to `create_and_use`. Rate limited per client.",
      policy: policy("N")
    })
      .setPayload(DeviceCodeRequest)
      .addSuccess(DeviceCodeResponse)
      .annotate(RequestFormNote, { form: true })
  )
  .add(
    Endpoint.post("token", "/v1/auth/device/token", {
      summary: "Poll for the device's key",
      description: "The device's poll (`grant_type` `urn:ietf:params:oauth:grant-type:device_code`). Once a person " +
        "approved, answers the new API key exactly once; later polls get `invalid_grant`. Until then a 400 in " +
        "RFC 8628's shape: `authorization_pending`; `slow_down` for a poll sooner than the interval (which grows " +
        "by 5 s); `access_denied`; `expired_token`; `invalid_request` or `unsupported_grant_type` for a malformed " +
        "poll. Every answer carries `Cache-Control: no-store`. The body is JSON, or form-encoded " +
        "(`application/x-www-form-urlencoded`) as OAuth clients send it.",
      policy: policy("N"),
      otherResponses: tokenErrorResponse
    })
      .setPayload(DeviceTokenRequest)
      .addSuccess(DeviceTokenResponse)
      .annotate(RequestFormNote, { form: true })
  )
  .add(
    Endpoint.get("describe", "/v1/auth/device", {
      summary: "Look up a device code",
      description: "What the device with this `user_code` asks for (case, spaces and dashes are ignored). 404 for an " +
        "unknown, expired or already decided code. Rate limited per user.",
      policy: policy("S"),
      errors: [ResourceNotFound, RateLimited]
    })
      .setUrlParams(Schema.Struct({ user_code: Schema.String }))
      .addSuccess(DeviceAuthorizationDto)
  )
  .add(
    Endpoint.post("approve", "/v1/auth/device/approve", {
      summary: "Approve a device",
      description: "Approves the device for the organization in `X-Organization-ID`, which the caller belongs to. " +
        "Its next poll receives a new key of the caller's with `preset` (default: the scope asked for), `name` " +
        "(default `<client name> (device)`) and a lifetime of `expires_in_days` (1-90, default 90); the key acts " +
        "with the caller's role. 404 for an unknown, expired or decided code.",
      policy: policy("S", "header", Roles.anyMember),
      errors: [ResourceNotFound, RateLimited]
    })
      .setPayload(DeviceApproveRequest)
      .addSuccess(DeviceApproved)
  )
  .add(
    Endpoint.post("deny", "/v1/auth/device/deny", {
      summary: "Deny a device",
      description: "Refuses the device: its next poll gets `access_denied`. Recorded in the audit log of the " +
        "organization in `X-Organization-ID`. 404 for an unknown, expired or decided code.",
      policy: policy("S", "header", Roles.anyMember),
      errors: [ResourceNotFound, RateLimited]
    })
      .setPayload(RequestBody({ user_code: UserCode }))
      .addSuccess(HttpApiSchema.NoContent)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Device authorization (RFC 8628): how the CLI signs in and receives an API key.")
{}
