/** Who is looking at a page: the signed-in user of the request's session, if any. */
import type { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { Authenticate } from "../kernel/http/Authenticate.js"

export interface Viewer {
  readonly id: string
  readonly email: string
}

/** The session's user (pages are read with GET, so no CSRF token is needed); none when signed out. */
export const viewerOf = (authenticate: Authenticate["Type"], request: HttpServerRequest.HttpServerRequest) =>
  authenticate.authenticate(request, { access: "S", organization: "none" }).pipe(
    Effect.map((caller) => caller.user as Option.Option<Viewer>),
    Effect.orElseSucceed(() => Option.none<Viewer>())
  )

/** The page's own address with its query, as a `return_to` for signing in first. */
export const returnToOf = (request: HttpServerRequest.HttpServerRequest, uiPath: string) => {
  const url = new URL(request.url, "http://x")
  return url.pathname.slice(uiPath.length) + url.search
}
