/** The environments area's errors (api.md error codes). */
import { ProblemError } from "../kernel/http/Problem.js"

export class EnvironmentInUse
  extends ProblemError<EnvironmentInUse>()("environment_in_use", 409, "Environment in use")
{}
