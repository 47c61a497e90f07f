/** The error of the health routes. */
import { ProblemError } from "../kernel/http/Problem.js"

export class NotReady extends ProblemError<NotReady>()("not_ready", 503, "Not ready to serve") {}
