import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../kernel/http/Authorization.js"
import { RequestBody } from "../kernel/http/Dto.js"
import { EmailUnavailable, InvalidCode, RateLimited, UnsupportedProvider } from "../kernel/http/Errors.js"
import { Policy, policy } from "../kernel/http/Policy.js"
import { wire } from "../kernel/http/Problem.js"

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
    HttpApiEndpoint.get("providers", "/v1/auth/providers")
      .addSuccess(SignInProvidersDto)
      .annotate(Policy, policy("N"))
  )
  .add(
    HttpApiEndpoint.post("emailStart", "/v1/auth/email/start")
      .setPayload(EmailStartRequest)
      .addSuccess(EmailStarted, { status: 202 })
      .addError(wire(UnsupportedProvider))
      .addError(wire(RateLimited))
      .addError(wire(EmailUnavailable))
      .annotate(Policy, policy("N"))
  )
  .add(
    HttpApiEndpoint.post("emailVerify", "/v1/auth/email/verify")
      .setPayload(EmailVerifyRequest)
      .addSuccess(EmailVerified)
      .addError(wire(InvalidCode))
      .addError(wire(UnsupportedProvider))
      .addError(wire(RateLimited))
      .annotate(Policy, policy("N"))
  )
  .add(
    HttpApiEndpoint.get("emailCallback", "/v1/auth/email/callback")
      .setUrlParams(Schema.Struct({ token: Schema.optional(Schema.String) }))
      .addSuccess(HttpApiSchema.Empty(303))
      .annotate(Policy, policy("N"))
  )
  .add(
    HttpApiEndpoint.post("logout", "/v1/auth/logout")
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(Policy, policy("S"))
  )
  .middleware(Authorization)
{}
