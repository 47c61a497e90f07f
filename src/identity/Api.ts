/** The identity area's two groups: sign-in (`auth`) and API keys (`apiKeys`). */
import { HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { Preset } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { NullableTimestamp, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { RateLimited, ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"
import { EmailUnavailable, InvalidCode, UnsupportedProvider } from "./Errors.js"

export const SignInProvidersDto = Schema.Struct({
  access: Schema.String,
  providers: Schema.Array(Schema.Struct({
    name: Schema.String,
    display_name: Schema.String,
    kind: Schema.String,
    default: Schema.Boolean
  })),
  waitlist_url: Schema.NullOr(Schema.String)
})

/** Loose on purpose: a malformed address still gets 422 from the service with a field error. */
export const EmailAddress = Schema.String.pipe(
  Schema.trimmed(),
  Schema.maxLength(254),
  Schema.pattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: () => "must be an email address" })
)

export const EmailStartRequest = RequestBody({
  email: EmailAddress,
  return_to: Schema.optional(Schema.NullOr(Schema.String))
})

export const EmailStarted = Schema.Struct({ message: Schema.String })

export const EmailVerifyRequest = RequestBody({
  email: EmailAddress,
  code: Schema.String.pipe(Schema.pattern(/^\d{6}$/, { message: () => "must be the 6-digit code" }))
})

export const EmailVerified = Schema.Struct({ return_to: Schema.String })

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    Endpoint.get("providers", "/v1/auth/providers", { policy: policy("N") })
      .addSuccess(SignInProvidersDto)
  )
  .add(
    Endpoint.post("emailStart", "/v1/auth/email/start", {
      policy: policy("N"),
      errors: [UnsupportedProvider, RateLimited, EmailUnavailable]
    })
      .setPayload(EmailStartRequest)
      .addSuccess(EmailStarted, { status: 202 })
  )
  .add(
    Endpoint.post("emailVerify", "/v1/auth/email/verify", {
      policy: policy("N"),
      errors: [InvalidCode, UnsupportedProvider, RateLimited]
    })
      .setPayload(EmailVerifyRequest)
      .addSuccess(EmailVerified)
  )
  .add(
    Endpoint.get("emailCallback", "/v1/auth/email/callback", { policy: policy("N") })
      .setUrlParams(Schema.Struct({ token: Schema.optional(Schema.String) }))
      .addSuccess(HttpApiSchema.Empty(303))
  )
  .add(
    Endpoint.post("logout", "/v1/auth/logout", { policy: policy("S") })
      .addSuccess(HttpApiSchema.NoContent)
  )
  .middleware(Authorization)
{}

export const ApiKeyDto = Schema.Struct({
  id: Uuid,
  organization_id: Uuid,
  created_by: Uuid,
  name: Schema.String,
  prefix: Schema.String,
  last_four: Schema.String,
  preset: Preset,
  created_at: Timestamp,
  expires_at: Timestamp,
  last_used_at: NullableTimestamp,
  revoked_at: NullableTimestamp
})
export type ApiKeyDto = typeof ApiKeyDto.Type

export const CreateApiKeyRequest = RequestBody({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64)),
  preset: Preset,
  expires_in_days: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 365)), { default: () => 90 })
})

export const CreatedApiKey = Schema.Struct({ api_key: ApiKeyDto, secret: Schema.String })

export const ApiKeyList = Schema.Struct({ items: Schema.Array(ApiKeyDto) })

export class ApiKeysApi extends HttpApiGroup.make("apiKeys")
  .add(
    Endpoint.get("list", "/v1/api-keys", { policy: policy("F", "header") })
      .addSuccess(ApiKeyList)
  )
  .add(
    Endpoint.post("create", "/v1/api-keys", { policy: policy("F", "header") })
      .setPayload(CreateApiKeyRequest)
      .addSuccess(CreatedApiKey, { status: 201 })
  )
  .add(
    Endpoint.del("revoke", "/v1/api-keys/:id", { policy: policy("F", "header"), errors: [ResourceNotFound] })
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(HttpApiSchema.NoContent)
  )
  .middleware(Authorization)
{}
