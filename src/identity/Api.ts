/** The identity area's two groups: sign-in (`auth`) and API keys (`apiKeys`). */
import { HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Preset, Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { NullableTimestamp, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import {
  CsrfInvalid,
  Forbidden,
  InvalidApiKey,
  RateLimited,
  ResourceNotFound,
  SessionRequired,
  Unauthenticated
} from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"
import { RequestFormNote } from "../kernel/http/RequestForm.js"
import { EmailUnavailable, IdentityInUse, InvalidCode, UnsupportedProvider } from "./Errors.js"

export const SignInProvidersDto = Schema.Struct({
  access: Schema.Literal("open", "invite_only"),
  providers: Schema.Array(Schema.Struct({
    name: Schema.String,
    display_name: Schema.String,
    kind: Schema.Literal("oidc", "email"),
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

export const LinkEmailRequest = RequestBody({
  email: EmailAddress,
  return_to: Schema.optional(Schema.NullOr(Schema.String))
})

const optionalQuery = Schema.optional(Schema.String)

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    Endpoint.get("providers", "/v1/auth/providers", {
      summary: "List sign-in methods",
      description: "The sign-in methods this server offers (OIDC providers, email when mail is on) and whether " +
        "anyone may sign up (`access`).",
      policy: policy("N")
    })
      .addSuccess(SignInProvidersDto)
  )
  .add(
    Endpoint.get("login", "/v1/auth/login", {
      summary: "Sign in with a provider",
      description: "Redirects (307) to the OIDC provider `provider` (omitted: the default one), with PKCE, state and " +
        "nonce; the sign-in must finish within ten minutes in the same browser. With a session it links the " +
        "provider to the signed-in user instead. `return_to` is a same-origin UI path (an invalid one becomes `/`). " +
        "Failures redirect (303) to `{ui_url}/sign-in?error=` `unsupported_provider`, `oidc_unavailable` or " +
        "`oidc_failed`.",
      policy: policy("N")
    })
      .setUrlParams(Schema.Struct({ provider: optionalQuery, return_to: optionalQuery }))
      .addSuccess(HttpApiSchema.Empty(307))
      .addSuccess(HttpApiSchema.Empty(303))
  )
  .add(
    Endpoint.get("callback", "/v1/auth/callback", {
      summary: "Finish a provider sign-in",
      description: "The provider's redirect: signs in (session and CSRF cookies) or links the provider, then " +
        "redirects (303) to the stored `return_to` on the UI. A user is found by the provider's subject, else by a " +
        "verified address, else created when sign-up allows it. Failures redirect (303) to " +
        "`{ui_url}/sign-in?error=` `access_denied`, `identity_in_use`, `oidc_failed`, `oidc_unavailable`, " +
        "`session_expired` or `unsupported_provider`.",
      policy: policy("N")
    })
      .setUrlParams(Schema.Struct({ code: optionalQuery, state: optionalQuery, error: optionalQuery }))
      .addSuccess(HttpApiSchema.Empty(303))
      // The provider's redirect carries parameters of its own (`iss`, `session_state`, `error_description`).
      .annotate(RequestFormNote, { foreignQuery: true })
  )
  .add(
    Endpoint.post("emailStart", "/v1/auth/email/start", {
      summary: "Send a sign-in code and link",
      description: "Emails a 6-digit code and a magic link (single use, ten minutes, same browser only) if the " +
        "address can receive email; the answer never depends on whether an account exists. `return_to` is a " +
        "same-origin UI path (an invalid one becomes `/`). Rate limited per address and client.",
      policy: policy("N"),
      errors: [UnsupportedProvider, RateLimited, EmailUnavailable]
    })
      .setPayload(EmailStartRequest)
      .addSuccess(EmailStarted, { status: 202 })
  )
  .add(
    Endpoint.post("emailVerify", "/v1/auth/email/verify", {
      summary: "Sign in with an emailed code",
      description: "Verifies the 6-digit code: signs in (sets the session and CSRF cookies), creating the user on " +
        "the first verified sign-in when sign-up allows it. A code from `POST /v1/auth/link/email` instead links " +
        "the address to the signed-in user and needs that session's cookie and CSRF token (401 without a " +
        "session, 403 with another user's, 409 `identity_in_use` when the address is another account's). " +
        "400 `invalid_code` for a wrong, expired, used or superseded code.",
      policy: policy("N"),
      errors: [
        InvalidCode,
        UnsupportedProvider,
        RateLimited,
        Unauthenticated,
        InvalidApiKey,
        Forbidden,
        SessionRequired,
        CsrfInvalid,
        IdentityInUse
      ]
    })
      .setPayload(EmailVerifyRequest)
      .addSuccess(EmailVerified)
  )
  .add(
    Endpoint.get("emailCallback", "/v1/auth/email/callback", {
      summary: "Open a magic link",
      description: "Signs in with a magic link's `token`, once, within ten minutes, in the browser that asked for " +
        "it (a linking link also needs the asking user's session); redirects (303) to the stored `return_to`, or " +
        "to `{ui_url}/sign-in?error=` `session_expired`, `identity_in_use` or `unsupported_provider`.",
      policy: policy("N")
    })
      .setUrlParams(Schema.Struct({ token: Schema.optional(Schema.String) }))
      .addSuccess(HttpApiSchema.Empty(303))
  )
  .add(
    Endpoint.post("linkEmail", "/v1/auth/link/email", {
      summary: "Link another email address",
      description: "Emails a code and a link to `email`; verifying the code (`POST /v1/auth/email/verify`) or " +
        "opening the link in this browser with this session links the address to the signed-in user, who may " +
        "then sign in with it. Answers as `POST /v1/auth/email/start` does. Rate limited per user and address.",
      policy: policy("S"),
      errors: [RateLimited, EmailUnavailable]
    })
      .setPayload(LinkEmailRequest)
      .addSuccess(EmailStarted, { status: 202 })
  )
  .add(
    Endpoint.post("logout", "/v1/auth/logout", {
      summary: "Sign out",
      description: "Ends the session. API keys cannot sign out: revoke the key instead. Takes no body.",
      policy: policy("S")
    })
      .addSuccess(HttpApiSchema.NoContent)
  )
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Sign-in: the methods offered, OIDC providers, email codes and magic links, linking identities, sign-out."
  )
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
    Endpoint.get("list", "/v1/api-keys", {
      summary: "List API keys",
      description: "Owners and admins see every key of the organization; other members only their own. Secrets " +
        "are never shown again.",
      policy: policy("F", "header", Roles.anyMember)
    })
      .addSuccess(ApiKeyList)
  )
  .add(
    Endpoint.post("create", "/v1/api-keys", {
      summary: "Create an API key",
      description: "A key of the organization, acting with its creator's current role and the chosen `preset` " +
        "(not above the calling key's own), valid `expires_in_days` (1-365, default 90). The `secret` is " +
        "answered only here.",
      policy: policy("F", "header", Roles.anyMember)
    })
      .setPayload(CreateApiKeyRequest)
      .addSuccess(CreatedApiKey, { status: 201 })
  )
  .add(
    Endpoint.del("revoke", "/v1/api-keys/:id", {
      summary: "Revoke an API key",
      description: "The key stops working at once. Owners and admins may revoke any key of the organization, " +
        "other members their own. Takes no body.",
      policy: policy("F", "header", Roles.anyMember),
      errors: [ResourceNotFound]
    })
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(HttpApiSchema.NoContent)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "API keys: create, list and revoke the organization's keys.")
{}
