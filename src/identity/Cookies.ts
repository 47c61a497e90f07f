/** The cookies svc sets: session and CSRF after a sign-in, the email state during one. */
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Duration } from "effect"
import { CSRF_COOKIE, SESSION_COOKIE } from "../kernel/http/Authenticate.js"
import { secureWhenForwardedHttps } from "../kernel/http/ClientAddress.js"
import { EMAIL_STATE_COOKIE } from "./EmailSignIn.js"
import { OIDC_BROWSER_COOKIE } from "./OidcSignIn.js"
import { sessionLifetimeMillis } from "./Sessions.js"

type Response = HttpServerResponse.HttpServerResponse

/** Secure by the https base URL; per request too, behind a trusted proxy that says https (ClientAddress.ts). */
const secureFor = (baseUrl: string) => baseUrl.startsWith("https:")

export const withSession = (baseUrl: string, token: string, csrf: string) => (response: Response) => {
  const secure = secureFor(baseUrl)
  const maxAge = Duration.millis(sessionLifetimeMillis)
  return response.pipe(
    HttpServerResponse.unsafeSetCookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: "lax",
      path: "/",
      secure,
      maxAge
    }),
    HttpServerResponse.unsafeSetCookie(CSRF_COOKIE, csrf, {
      httpOnly: false,
      sameSite: "lax",
      path: "/",
      secure,
      maxAge
    })
  )
}

export const withoutSession = (baseUrl: string) => (response: Response) => {
  const options = { path: "/", secure: secureFor(baseUrl), sameSite: "lax" as const }
  return response.pipe(
    HttpServerResponse.unsafeSetCookie(SESSION_COOKIE, "", { ...options, httpOnly: true, maxAge: 0 }),
    HttpServerResponse.unsafeSetCookie(CSRF_COOKIE, "", { ...options, maxAge: 0 })
  )
}

const emailStatePath = "/v1/auth/email"

export const withEmailState = (baseUrl: string, state: string) =>
  HttpServerResponse.unsafeSetCookie(EMAIL_STATE_COOKIE, state, {
    httpOnly: true,
    sameSite: "lax",
    path: emailStatePath,
    secure: secureFor(baseUrl),
    maxAge: Duration.minutes(10)
  })

export const withoutEmailState = (baseUrl: string) =>
  HttpServerResponse.unsafeSetCookie(EMAIL_STATE_COOKIE, "", {
    httpOnly: true,
    sameSite: "lax",
    path: emailStatePath,
    secure: secureFor(baseUrl),
    maxAge: 0
  })

/** The browser secret of an OIDC sign-in, sent back only to the callback. */
const oidcPath = "/v1/auth/callback"

export const withOidcBrowser = (baseUrl: string, secret: string) =>
  HttpServerResponse.unsafeSetCookie(OIDC_BROWSER_COOKIE, secret, {
    httpOnly: true,
    sameSite: "lax",
    path: oidcPath,
    secure: secureFor(baseUrl),
    maxAge: Duration.minutes(10)
  })

export const withoutOidcBrowser = (baseUrl: string) =>
  HttpServerResponse.unsafeSetCookie(OIDC_BROWSER_COOKIE, "", {
    httpOnly: true,
    sameSite: "lax",
    path: oidcPath,
    secure: secureFor(baseUrl),
    maxAge: 0
  })

/**
 * Applies a cookie change to whatever response the handler's typed result becomes (its cookies
 * Secure when a trusted proxy says the request came over https: this runs after the edge's own).
 */
export const onResponse = (change: (response: Response) => Response) =>
  HttpApp.appendPreResponseHandler((_request, response) => secureWhenForwardedHttps(change(response)))
