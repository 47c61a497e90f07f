/** The alerts area's errors. */
import { ProblemError } from "../kernel/http/Problem.js"

/** An unsubscribe link whose token is missing, altered or not ours (400, api.md Errors). */
export class InvalidUnsubscribeToken
  extends ProblemError<InvalidUnsubscribeToken>()("invalid_token", 400, "Invalid unsubscribe link")
{}
