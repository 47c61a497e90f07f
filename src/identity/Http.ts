import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, flow, Option } from "effect"
import { Api } from "../Api.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { Authenticate } from "../kernel/http/Authenticate.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { Caller } from "../kernel/http/Authorization.js"
import { currentUser } from "../kernel/http/CallerContext.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import {
  onResponse,
  withEmailState,
  withOidcBrowser,
  withoutEmailState,
  withoutOidcBrowser,
  withoutSession,
  withSession
} from "./Cookies.js"
import { EMAIL_STATE_COOKIE, EmailSignIn } from "./EmailSignIn.js"
import { OIDC_BROWSER_COOKIE, OidcSignIn, type SignInErrorCode } from "./OidcSignIn.js"
import { Sessions } from "./Sessions.js"
import { optionalSessionUserOf, sessionUserOf } from "./SessionUser.js"
import { SignInMethods } from "./SignInMethods.js"

const clientOf = (request: HttpServerRequest.HttpServerRequest) =>
  Option.getOrElse(request.remoteAddress, () => "unknown")

export const AuthHandlers = HttpApiBuilder.group(Api, "auth", (handlers) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const methods = yield* SignInMethods
    const emailSignIn = yield* EmailSignIn
    const oidcSignIn = yield* OidcSignIn
    const sessions = yield* Sessions
    const authenticate = yield* Authenticate

    const startSession = (userId: string, organizationId: string | null) =>
      Effect.map(sessions.create(userId, organizationId), (session) =>
        withSession(config.baseUrl, session.token, session.csrf))

    /** Where a browser sign-in goes on the UI: the stored `return_to`, or the sign-in page with an error. */
    const toUi = (path: string) =>
      HttpServerResponse.redirect(`${config.uiUrl}${path}`, { status: 303 })
    const toSignInError = (code: SignInErrorCode) => toUi(`/sign-in?error=${code}`)

    return handlers
      .handle("providers", () =>
        Effect.succeed({ access: methods.access, providers: methods.providers, waitlist_url: methods.waitlistUrl }))
      .handle("login", ({ request, urlParams }) =>
        Effect.gen(function*() {
          const linkUser = yield* optionalSessionUserOf(authenticate, request)
          return yield* oidcSignIn.begin(
            urlParams.provider,
            urlParams.return_to,
            Option.getOrNull(linkUser),
            clientOf(request)
          ).pipe(
            Effect.map((begun) =>
              HttpServerResponse.redirect(begun.url, { status: 307 }).pipe(
                withOidcBrowser(config.baseUrl, begun.browserSecret)
              )
            ),
            Effect.catchTag("SignInFailed", (failure) =>
              Effect.as(Effect.logInfo("OIDC sign-in not started", failure.reason), toSignInError(failure.code)))
          )
        }))
      .handle("callback", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const query = new URL(request.url, "http://x").searchParams
          const sessionUser = yield* optionalSessionUserOf(authenticate, request)
          const completed = yield* Effect.either(
            oidcSignIn.complete(query, request.cookies[OIDC_BROWSER_COOKIE], sessionUser)
          )
          const forget = withoutOidcBrowser(config.baseUrl)
          if (completed._tag === "Left") {
            yield* Effect.logInfo("OIDC sign-in failed", completed.left.reason)
            return forget(toSignInError(completed.left.code))
          }
          const done = completed.right
          if (done.kind === "linked") {
            return forget(toUi(done.returnTo))
          }
          const setSession = yield* startSession(done.user.id, done.organizationId)
          return toUi(done.returnTo).pipe(flow(setSession, forget))
        }))
      .handle("emailStart", ({ payload, request }) =>
        Effect.gen(function*() {
          const { state } = yield* emailSignIn.start(payload.email, payload.return_to, clientOf(request))
          yield* onResponse(withEmailState(config.baseUrl, state))
          return { message: "If this address can receive email, a sign-in code and link are on their way." }
        }))
      .handle("emailVerify", ({ payload, request }) =>
        Effect.gen(function*() {
          const verified = yield* emailSignIn.verify(payload.email, payload.code, sessionUserOf(authenticate, request))
          if (verified.kind === "signed_in") {
            yield* onResponse(yield* startSession(verified.user.id, verified.organizationId))
          }
          return { return_to: verified.returnTo }
        }))
      .handle("emailCallback", ({ urlParams }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const followed = yield* Effect.either(emailSignIn.followLink(
            urlParams.token,
            request.cookies[EMAIL_STATE_COOKIE],
            sessionUserOf(authenticate, request)
          ))
          if (followed._tag === "Left") {
            return toSignInError("identity_in_use")
          }
          if (Option.isNone(followed.right)) {
            return toSignInError("session_expired")
          }
          const done = followed.right.value
          const forget = withoutEmailState(config.baseUrl)
          if (done.kind === "linked") {
            return forget(toUi(done.returnTo))
          }
          const setSession = yield* startSession(done.user.id, done.organizationId)
          return toUi(done.returnTo).pipe(flow(setSession, forget))
        }))
      .handle("linkEmail", ({ payload }) =>
        Effect.gen(function*() {
          const user = yield* currentUser
          const { state } = yield* emailSignIn.startLink(user.id, payload.email, payload.return_to)
          yield* onResponse(withEmailState(config.baseUrl, state))
          return { message: "If this address can receive email, a code and link to add it are on their way." }
        }))
      .handle("logout", () =>
        Effect.gen(function*() {
          const caller = yield* Caller
          const credential = Option.getOrThrow(caller.credential)
          yield* sessions.revoke(credential.id)
          yield* onResponse(withoutSession(config.baseUrl))
        }))
  })).pipe(buildWithOnly(Authorization, AppConfig, Authenticate, EmailSignIn, OidcSignIn, Sessions, SignInMethods))
