/**
 * The error codes of api.md as tagged errors: tag = code, annotations = status and title.
 * Later areas add their own errors next to their routes; these are the ones every area shares.
 */
import { Schema } from "effect"
import { problem, ProblemFields } from "./Problem.js"

export class InvalidCode extends Schema.TaggedError<InvalidCode>()(
  "invalid_code",
  ProblemFields,
  problem(400, "Invalid code")
) {}

export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()(
  "unauthenticated",
  ProblemFields,
  problem(401, "Not signed in")
) {}

export class InvalidApiKey extends Schema.TaggedError<InvalidApiKey>()(
  "invalid_api_key",
  ProblemFields,
  problem(401, "Invalid API key")
) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "forbidden",
  ProblemFields,
  problem(403, "Forbidden")
) {}

export class InsufficientScope extends Schema.TaggedError<InsufficientScope>()(
  "insufficient_scope",
  ProblemFields,
  problem(403, "Insufficient scope")
) {}

export class CsrfInvalid extends Schema.TaggedError<CsrfInvalid>()(
  "csrf_invalid",
  ProblemFields,
  problem(403, "Missing or invalid CSRF token")
) {}

export class OrganizationMismatch extends Schema.TaggedError<OrganizationMismatch>()(
  "organization_mismatch",
  ProblemFields,
  problem(403, "Organization mismatch")
) {}

export class SessionRequired extends Schema.TaggedError<SessionRequired>()(
  "session_required",
  ProblemFields,
  problem(403, "A browser session is required")
) {}

export class ResourceNotFound extends Schema.TaggedError<ResourceNotFound>()(
  "resource_not_found",
  ProblemFields,
  problem(404, "Resource not found")
) {}

export class UnsupportedProvider extends Schema.TaggedError<UnsupportedProvider>()(
  "unsupported_provider",
  ProblemFields,
  problem(404, "Unsupported sign-in provider")
) {}

export class BodyTooLarge extends Schema.TaggedError<BodyTooLarge>()(
  "body_too_large",
  ProblemFields,
  problem(413, "Request body too large")
) {}

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()(
  "invalid_request",
  ProblemFields,
  problem(422, "Invalid request")
) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()(
  "rate_limited",
  { ...ProblemFields, retry_after_seconds: Schema.optional(Schema.Int) },
  problem(429, "Too many requests")
) {}

export class InternalError extends Schema.TaggedError<InternalError>()(
  "internal_error",
  ProblemFields,
  problem(500, "Internal error")
) {}

export class EmailUnavailable extends Schema.TaggedError<EmailUnavailable>()(
  "email_unavailable",
  ProblemFields,
  problem(503, "Email is not available on this server")
) {}
