/** The area's errors (api.md error codes). */
import { ProblemError } from "../kernel/http/Problem.js"

export class InvalidCode extends ProblemError<InvalidCode>()("invalid_code", 400, "Invalid code") {}
export class UnsupportedProvider
  extends ProblemError<UnsupportedProvider>()("unsupported_provider", 404, "Unsupported sign-in provider")
{}
export class EmailUnavailable
  extends ProblemError<EmailUnavailable>()("email_unavailable", 503, "Email is not available on this server")
{}
export class IdentityInUse
  extends ProblemError<IdentityInUse>()("identity_in_use", 409, "Identity already linked to another account")
{}
