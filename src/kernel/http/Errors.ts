/**
 * The error codes of api.md as tagged errors: tag = code, annotations = status and title.
 * Later areas add their own errors next to their routes; these are the ones every area shares.
 */
import { Schema } from "effect"
import { ProblemError } from "./Problem.js"

export class Unauthenticated extends ProblemError<Unauthenticated>()("unauthenticated", 401, "Not signed in") {}

export class InvalidApiKey extends ProblemError<InvalidApiKey>()("invalid_api_key", 401, "Invalid API key") {}

export class Forbidden extends ProblemError<Forbidden>()("forbidden", 403, "Forbidden") {}

export class InsufficientScope
  extends ProblemError<InsufficientScope>()("insufficient_scope", 403, "Insufficient scope")
{}

export class CsrfInvalid extends ProblemError<CsrfInvalid>()("csrf_invalid", 403, "Missing or invalid CSRF token") {}

export class OrganizationMismatch
  extends ProblemError<OrganizationMismatch>()("organization_mismatch", 403, "Organization mismatch")
{}

export class SessionRequired
  extends ProblemError<SessionRequired>()("session_required", 403, "A browser session is required")
{}

export class ResourceNotFound
  extends ProblemError<ResourceNotFound>()("resource_not_found", 404, "Resource not found")
{}

export class BodyTooLarge extends ProblemError<BodyTooLarge>()("body_too_large", 413, "Request body too large") {}

export class UnsupportedMediaType extends ProblemError<UnsupportedMediaType>()(
  "unsupported_media_type",
  415,
  "Unsupported media type"
) {}

export class InvalidRequest extends ProblemError<InvalidRequest>()("invalid_request", 422, "Invalid request") {}

export class RateLimited extends ProblemError<RateLimited>()("rate_limited", 429, "Too many requests", {
  retry_after_seconds: Schema.optional(Schema.Int)
}) {}

export class InternalError extends ProblemError<InternalError>()("internal_error", 500, "Internal error") {}

export class OrganizationSuspended extends ProblemError<OrganizationSuspended>()(
  "organization_suspended",
  403,
  "The organization is suspended"
) {}
