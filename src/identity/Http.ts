import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, flow, Option } from "effect"
import { Api } from "../Api.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { Caller } from "../kernel/http/Authorization.js"
import { onResponse, withEmailState, withoutEmailState, withoutSession, withSession } from "./Cookies.js"
import { EMAIL_STATE_COOKIE, EmailSignIn } from "./EmailSignIn.js"
import { Sessions } from "./Sessions.js"
import { SignInMethods } from "./SignInMethods.js"

export const AuthHandlers = HttpApiBuilder.group(Api, "auth", (handlers) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const methods = yield* SignInMethods
    const emailSignIn = yield* EmailSignIn
    const sessions = yield* Sessions

    const startSession = (userId: string, organizationId: string) =>
      Effect.map(sessions.create(userId, organizationId), (session) =>
        withSession(config.baseUrl, session.token, session.csrf))

    return handlers
      .handle("providers", () =>
        Effect.succeed({ access: methods.access, providers: methods.providers, waitlist_url: methods.waitlistUrl }))
      .handle("emailStart", ({ payload, request }) =>
        Effect.gen(function*() {
          const client = Option.getOrElse(request.remoteAddress, () =>
            "unknown")
          const { state } = yield* emailSignIn.start(payload.email, payload.return_to, client)
          yield* onResponse(withEmailState(config.baseUrl, state))
          return { message: "If this address can receive email, a sign-in code and link are on their way." }
        }))
      .handle("emailVerify", ({ payload }) =>
        Effect.gen(function*() {
          const signedIn = yield* emailSignIn.verify(payload.email, payload.code)
          yield* onResponse(yield* startSession(signedIn.user.id, signedIn.organizationId))
          return { return_to: signedIn.returnTo }
        }))
      .handle("emailCallback", ({ urlParams }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const signedIn = yield* emailSignIn.followLink(urlParams.token, request.cookies[EMAIL_STATE_COOKIE])
          if (Option.isNone(signedIn)) {
            return HttpServerResponse.redirect(`${config.uiUrl}/sign-in?error=session_expired`, { status: 303 })
          }
          const setSession = yield* startSession(signedIn.value.user.id, signedIn.value.organizationId)
          return HttpServerResponse.redirect(`${config.uiUrl}${signedIn.value.returnTo}`, { status: 303 }).pipe(
            flow(setSession, withoutEmailState(config.baseUrl))
          )
        }))
      .handle("logout", () =>
        Effect.gen(function*() {
          const caller = yield* Caller
          const credential = Option.getOrThrow(caller.credential)
          yield* sessions.revoke(credential.id)
          yield* onResponse(withoutSession(config.baseUrl))
        }))
  }))
