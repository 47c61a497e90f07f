/**
 * OIDC sign-in through `openid-client` (the certified relying party): discovery from the issuer
 * (an `http://` issuer only on a loopback host), authorization code with PKCE (S256), `state` and
 * `nonce`, scopes `openid email profile`. Every request to the provider trusts the CAs of
 * `SVC_EXTRA_CA_CERTS` besides Node's (src/kernel/tls/TrustedCas.ts).
 *
 * A sign-in under way is a row keyed by the hash of its `state`, used once, for ten minutes, and
 * bound to the browser that started it by the `svc_oidc` cookie: the PKCE verifier and the nonce
 * are derived from that cookie's secret and the state, so the row holds nothing that could finish
 * the sign-in. Started with a session, the callback links the provider to that user instead.
 */
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import * as NodeCrypto from "node:crypto"
import * as Oidc from "openid-client"
import { AppConfig, loopbackHttp, type OidcProviderConfig } from "../kernel/config/AppConfig.js"
import { randomToken, safeEqual, sha256 } from "../kernel/crypto/Tokens.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { RateLimiter } from "../kernel/http/RateLimiter.js"
import { trustingFetch } from "../kernel/tls/TrustedCas.js"
import { Accounts, type SignedIn } from "./Accounts.js"
import { safeReturnTo } from "./EmailSignIn.js"
import { OidcSignInsRepo } from "./OidcSignInsRepo.js"

export const OIDC_BROWSER_COOKIE = "svc_oidc"
export const oidcSignInLifetimeMillis = 10 * 60_000
/** Sign-ins started per client: each leaves a row until the next day's clean-up. */
export const loginsPerClient = { limit: 60, windowMillis: 10 * 60_000 }

/** The `?error=` codes a provider sign-in ends with on `{ui_url}/sign-in`. */
export type SignInErrorCode =
  | "access_denied"
  | "identity_in_use"
  | "oidc_failed"
  | "oidc_unavailable"
  | "session_expired"
  | "unsupported_provider"

export class SignInFailed extends Data.TaggedError("SignInFailed")<{
  readonly code: SignInErrorCode
  readonly reason: string
}> {}

const fail = (code: SignInErrorCode, reason: string) => Effect.fail(new SignInFailed({ code, reason }))

/** What the callback did: signed a user in, or linked the provider to the signed-in user. */
export type Completed =
  | ({ readonly kind: "signed_in"; readonly returnTo: string } & SignedIn)
  | { readonly kind: "linked"; readonly returnTo: string }

const derive = (browserSecret: string, state: string, purpose: string) =>
  NodeCrypto.createHmac("sha256", browserSecret).update(`${purpose}:${state}`).digest("base64url")

/** A network failure (the provider cannot be reached) rather than an answer that failed its checks. */
const unreachable = (error: unknown): boolean => {
  if (error instanceof TypeError || (error instanceof Error && error.name === "TimeoutError")) return true
  const cause = (error as { cause?: unknown } | null)?.cause
  return cause !== undefined && cause !== error && unreachable(cause)
}

/** An error with its causes ("fetch failed: self-signed certificate in certificate chain"). */
const described = (error: unknown): string => {
  const parts: Array<string> = []
  for (let at: unknown = error; at !== undefined && at !== null && parts.length < 5;) {
    parts.push(at instanceof Error ? at.message : String(at))
    const cause = (at as { cause?: unknown }).cause
    at = cause === at ? undefined : cause
  }
  return parts.join(": ")
}

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const repo = yield* OidcSignInsRepo
  const accounts = yield* Accounts
  const rateLimiter = yield* RateLimiter
  const redirectUri = `${config.baseUrl}/v1/auth/callback`
  const discovered = new Map<string, Oidc.Configuration>()
  const customFetch = trustingFetch(config.extraCaCerts)

  const providerNamed = (name: string | undefined) => {
    const chosen = name === undefined
      ? config.oidcProviders.find((provider) => provider.default) ?? config.oidcProviders[0]
      : config.oidcProviders.find((provider) => provider.name === name)
    return chosen === undefined
      ? fail("unsupported_provider", `no OIDC provider named ${name ?? "(default)"}`)
      : Effect.succeed(chosen)
  }

  /** The provider's metadata, discovered once it answers (a failure is retried by the next sign-in). */
  const configurationOf = (provider: OidcProviderConfig) =>
    Effect.suspend(() => {
      const known = discovered.get(provider.name)
      if (known !== undefined) return Effect.succeed(known)
      return Effect.tryPromise({
        try: () => {
          const issuer = new URL(provider.issuer)
          return Oidc.discovery(issuer, provider.client_id, undefined, Oidc.ClientSecretPost(provider.client_secret), {
            timeout: 10,
            ...(loopbackHttp(issuer) ? { execute: [Oidc.allowInsecureRequests] } : {}),
            ...(customFetch === undefined ? {} : { [Oidc.customFetch]: customFetch })
          })
        },
        catch: (error) =>
          new SignInFailed({ code: "oidc_unavailable", reason: `discovery failed: ${described(error)}` })
      }).pipe(Effect.tap((configuration) => Effect.sync(() => discovered.set(provider.name, configuration))))
    })

  return {
    /** The provider's authorization URL and the browser secret to keep in the `svc_oidc` cookie. */
    begin: (
      providerName: string | undefined,
      returnTo: string | undefined,
      linkUserId: string | null,
      client: string
    ) =>
      Effect.gen(function*() {
        yield* rateLimiter.consume(`oidc-login:client:${client}`, loginsPerClient)
        const provider = yield* providerNamed(providerName)
        const configuration = yield* configurationOf(provider)
        const now = yield* Clock.currentTimeMillis
        const state = randomToken()
        const browserSecret = randomToken()
        yield* repo.insert({
          id: uuidv7(),
          state_hash: sha256(state),
          browser_hash: sha256(browserSecret),
          provider: provider.name,
          return_to: safeReturnTo(returnTo),
          link_user_id: linkUserId,
          created_at: now,
          expires_at: now + oidcSignInLifetimeMillis,
          used_at: null
        })
        const challenge = yield* Effect.promise(() =>
          Oidc.calculatePKCECodeChallenge(derive(browserSecret, state, "pkce"))
        )
        const url = Oidc.buildAuthorizationUrl(configuration, {
          redirect_uri: redirectUri,
          scope: "openid email profile",
          code_challenge: challenge,
          code_challenge_method: "S256",
          state,
          nonce: derive(browserSecret, state, "nonce")
        })
        return { url: url.href, browserSecret }
      }),
    /**
     * Finishes a sign-in from the provider's redirect: `query` is the callback's query string,
     * `browserSecret` the `svc_oidc` cookie, `sessionUser` the signed-in user of the request.
     */
    complete: (query: URLSearchParams, browserSecret: string | undefined, sessionUser: Option.Option<string>) =>
      Effect.gen(function*() {
        const state = query.get("state")
        if (state === null) return yield* fail("session_expired", "the callback carries no state")
        const now = yield* Clock.currentTimeMillis
        const taken = yield* repo.take(sha256(state), now)
        if (Option.isNone(taken)) return yield* fail("session_expired", "unknown or used state")
        const signIn = taken.value
        if (signIn.expires_at <= now) return yield* fail("session_expired", "the sign-in took too long")
        if (browserSecret === undefined || !safeEqual(sha256(browserSecret), signIn.browser_hash)) {
          return yield* fail("session_expired", "the callback reached another browser")
        }
        const error = query.get("error")
        if (error !== null) {
          return yield* fail(error === "access_denied" ? "access_denied" : "oidc_failed", `provider answered ${error}`)
        }
        if (signIn.link_user_id !== null && Option.getOrNull(sessionUser) !== signIn.link_user_id) {
          return yield* fail("session_expired", "the session that asked to link is gone")
        }
        const provider = yield* providerNamed(signIn.provider)
        const configuration = yield* configurationOf(provider)
        const tokens = yield* Effect.tryPromise({
          try: () =>
            Oidc.authorizationCodeGrant(configuration, new URL(`${redirectUri}?${query}`), {
              pkceCodeVerifier: derive(browserSecret, state, "pkce"),
              expectedNonce: derive(browserSecret, state, "nonce"),
              expectedState: state,
              idTokenExpected: true
            }),
          catch: (cause) =>
            new SignInFailed({
              code: unreachable(cause) ? "oidc_unavailable" : "oidc_failed",
              reason: `code exchange failed: ${described(cause)}`
            })
        })
        const claims = tokens.claims()
        if (claims === undefined) return yield* fail("oidc_failed", "no ID token")
        // Providers may keep scope claims out of the ID token (the spec's default): ask userinfo then.
        const profile = typeof claims.email === "string" ? claims : yield* Effect.tryPromise({
          try: () => Oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub),
          catch: (cause) =>
            new SignInFailed({
              code: unreachable(cause) ? "oidc_unavailable" : "oidc_failed",
              reason: `userinfo failed: ${described(cause)}`
            })
        })
        const identity = {
          provider: provider.name,
          subject: claims.sub,
          email: typeof profile.email === "string" ? profile.email : undefined,
          emailVerified: profile.email_verified === true
        }
        if (signIn.link_user_id !== null) {
          yield* accounts.linkProvider(signIn.link_user_id, identity).pipe(
            Effect.catchTag("identity_in_use", () => fail("identity_in_use", "linked to another user"))
          )
          return { kind: "linked", returnTo: signIn.return_to } satisfies Completed as Completed
        }
        const signedIn = yield* accounts.signInWithProvider(identity).pipe(
          Effect.catchTags({
            identity_in_use: () => fail("identity_in_use", "linked to another user"),
            SignUpRefused: () => fail("access_denied", "sign-up is closed to this address, or it is unverified")
          })
        )
        return { kind: "signed_in", ...signedIn, returnTo: signIn.return_to } satisfies Completed as Completed
      })
  }
})

export class OidcSignIn extends Context.Tag("svc/identity/OidcSignIn")<
  OidcSignIn,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(OidcSignIn, make)
}
