/**
 * The signed-in user of a request on a route that anyone may call but that acts differently for a
 * session (linking an identity): the session's user id, or why there is none. Read only when
 * needed, so a plain sign-in never fails for a stale cookie.
 */
import type { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import type { Authenticate } from "../kernel/http/Authenticate.js"
import type { CsrfInvalid, InvalidApiKey, SessionRequired, Unauthenticated } from "../kernel/http/Errors.js"

export type NoSession = Unauthenticated | InvalidApiKey | SessionRequired | CsrfInvalid

const kept = new Set(["unauthenticated", "invalid_api_key", "session_required", "csrf_invalid"])

export const sessionUserOf = (authenticate: Authenticate["Type"], request: HttpServerRequest.HttpServerRequest) =>
  authenticate.authenticate(request, { access: "S", organization: "none" }).pipe(
    Effect.map((caller) => Option.getOrThrow(caller.user).id),
    // No organization is asked for, so the organization and role errors cannot occur.
    Effect.catchAll((error) => kept.has(error._tag) ? Effect.fail(error as NoSession) : Effect.die(error))
  )

/** The session's user, or none (for routes where a session only changes what happens). */
export const optionalSessionUserOf = (
  authenticate: Authenticate["Type"],
  request: HttpServerRequest.HttpServerRequest
) => Effect.option(sessionUserOf(authenticate, request))
