/**
 * Email sign-in: a 6-digit code and a magic link in one message, valid ten minutes, superseded by a
 * newer request, closed after a bounded number of wrong codes. The link works only in the browser
 * holding the `svc_email_state` cookie set by the start request, so mail scanners that open links
 * do not use it up (extensions.md §12).
 *
 * A code asked by a signed-in user through `POST /v1/auth/link/email` links its address to that
 * user instead: verifying it (or following its link) needs that user's session. Under
 * `SVC_SIGNUP=invite_only` a new address without an invitation gets the same answer and cookie as
 * any other, but no mail and no stored code.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { randomToken, safeEqual, sha256, sixDigitCode } from "../kernel/crypto/Tokens.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { Forbidden } from "../kernel/http/Errors.js"
import { RateLimiter } from "../kernel/http/RateLimiter.js"
import { Mail } from "../kernel/mail/Mail.js"
import { Accounts, normalizeEmail, type SignedIn } from "./Accounts.js"
import { type EmailSignInRow, EmailSignInsRepo } from "./EmailSignInsRepo.js"
import { EmailUnavailable, type IdentityInUse, InvalidCode, UnsupportedProvider } from "./Errors.js"

export const EMAIL_STATE_COOKIE = "svc_email_state"
export const codeLifetimeMillis = 10 * 60_000
export const maxWrongCodes = 5

const window = 15 * 60_000
export const limits = {
  startPerAddress: { limit: 5, windowMillis: window },
  startPerClient: { limit: 30, windowMillis: window },
  verifyPerAddress: { limit: 20, windowMillis: window },
  linkPerUser: { limit: 10, windowMillis: window }
}

/** What a verified code or followed link did: signed someone in, or linked an address to them. */
export type Verified =
  | ({ readonly kind: "signed_in"; readonly returnTo: string } & SignedIn)
  | { readonly kind: "linked"; readonly returnTo: string; readonly userId: string }

/**
 * The signed-in user asking, read only for a linking code: their session's user id, or the reason
 * they are not (no session, another credential, a missing CSRF token).
 */
export type SessionUser<E> = Effect.Effect<string, E>

const codeHash = (signInId: string, code: string) => sha256(`${signInId}:${code}`)

/** `return_to` is a same-origin UI path with a single leading `/`, at most 2048 bytes; else `/`. */
export const safeReturnTo = (value: string | null | undefined) =>
  typeof value === "string" && /^\/(?![/\\])[^\s\\]*$/.test(value) && Buffer.byteLength(value) <= 2048 ? value : "/"

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const mail = yield* Mail
  const repo = yield* EmailSignInsRepo
  const accounts = yield* Accounts
  const rateLimiter = yield* RateLimiter

  // SVC_MAIL=off: starting answers 503 email_unavailable (extensions.md §1); codes and links
  // cannot exist, so verifying answers 404 unsupported_provider (api.md).
  const ensureCanSend = mail.available
    ? Effect.void
    : Effect.fail(new EmailUnavailable({ detail: "Email is turned off on this server (SVC_MAIL=off)" }))
  const ensureConfigured = mail.available
    ? Effect.void
    : Effect.fail(new UnsupportedProvider({ detail: "Email sign-in is not configured on this server" }))

  const message = (to: string, code: string, token: string, linking: boolean) => {
    const link = `${config.baseUrl}/v1/auth/email/callback?token=${encodeURIComponent(token)}`
    const what = linking ? "add this address to your svc account" : "sign in"
    return {
      to,
      subject: linking ? `Your svc code to link this address: ${code}` : `Your svc sign-in code: ${code}`,
      text: (linking ? `Your code to link this address is ${code}` : `Your sign-in code is ${code}`) +
        `\n\nOr open this link in the same browser to ${what}:\n${link}\n\n` +
        `The code and the link work once, within ten minutes. If you did not ask for this, ignore this message.\n`,
      html: `<p>Your code is <strong>${code}</strong></p>` +
        `<p>Or <a href="${link}">open this link</a> in the same browser to ${what}.</p>` +
        `<p>The code and the link work once, within ten minutes.</p>`
    }
  }

  /** Stores a new code and link for `email` (superseding older ones) and mails them. */
  const issue = (email: string, returnTo: string | null | undefined, linkUserId: string | null) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const id = uuidv7()
      const code = sixDigitCode()
      const token = randomToken()
      const state = randomToken()
      const row: EmailSignInRow = {
        id,
        email,
        code_hash: codeHash(id, code),
        link_token_hash: sha256(token),
        state_hash: sha256(state),
        return_to: safeReturnTo(returnTo),
        attempts: 0,
        created_at: now,
        expires_at: now + codeLifetimeMillis,
        closed_at: null,
        closed_reason: null,
        link_user_id: linkUserId
      }
      yield* repo.start(row)
      yield* mail.send(message(email, code, token, linkUserId !== null)).pipe(
        Effect.tapError((error) => Effect.logWarning("sign-in email not sent", error.cause)),
        // A code nobody received must not stay usable.
        Effect.tapError(() => repo.close(id, now, "not_sent")),
        Effect.mapError(() => new EmailUnavailable({ detail: "The sign-in email could not be sent" }))
      )
      return { state }
    })

  /** What an open, unexpired sign-in's code or link does once used; the sign-in is closed only on success. */
  const complete = <E>(signIn: EmailSignInRow, sessionUser: SessionUser<E>) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const invalid = new InvalidCode({ detail: "The code is wrong, expired, used or superseded" })
      if (signIn.link_user_id !== null) {
        const userId = yield* sessionUser
        if (userId !== signIn.link_user_id) {
          return yield* new Forbidden({ detail: "This code links an address to another user's account" })
        }
        if (!(yield* repo.close(signIn.id, now, "used"))) return yield* invalid
        yield* accounts.linkAddress(userId, signIn.email)
        return { kind: "linked", returnTo: signIn.return_to, userId } satisfies Verified as Verified
      }
      if (!(yield* repo.close(signIn.id, now, "used"))) return yield* invalid
      // The invitation that let the address start may have closed since: the code is then no good.
      const signedIn = yield* Effect.catchTag(accounts.signIn(signIn.email), "SignUpRefused", () => invalid)
      return { kind: "signed_in", ...signedIn, returnTo: signIn.return_to } satisfies Verified as Verified
    })

  return {
    /** Sends a code and a link; returns the browser state to set as `svc_email_state`. */
    start: (rawEmail: string, returnTo: string | null | undefined, client: string) =>
      Effect.gen(function*() {
        yield* ensureCanSend
        const email = normalizeEmail(rawEmail)
        yield* rateLimiter.consume(`email-start:client:${client}`, limits.startPerClient)
        yield* rateLimiter.consume(`email-start:address:${email}`, limits.startPerAddress)
        // The answer is the same either way: a new address that may not sign up gets nothing.
        if (!(yield* accounts.addressKnown(email)) && !(yield* accounts.mayCreate(email))) {
          return { state: randomToken() }
        }
        return yield* issue(email, returnTo, null)
      }),
    /** A signed-in user asks to link `email`: a code and link that only their session can use. */
    startLink: (userId: string, rawEmail: string, returnTo: string | null | undefined) =>
      Effect.gen(function*() {
        yield* ensureCanSend
        const email = normalizeEmail(rawEmail)
        yield* rateLimiter.consume(`email-link:user:${userId}`, limits.linkPerUser)
        yield* rateLimiter.consume(`email-start:address:${email}`, limits.startPerAddress)
        return yield* issue(email, returnTo, userId)
      }),
    /** Checks a code: signs in (the user exists afterwards) or, for a linking code, links the address. */
    verify: <E>(rawEmail: string, code: string, sessionUser: SessionUser<E>) =>
      Effect.gen(function*() {
        yield* ensureConfigured
        const email = normalizeEmail(rawEmail)
        yield* rateLimiter.consume(`email-verify:address:${email}`, limits.verifyPerAddress)
        const now = yield* Clock.currentTimeMillis
        const invalid = new InvalidCode({ detail: "The code is wrong, expired, used or superseded" })
        const latest = yield* repo.latestFor(email)
        if (Option.isNone(latest)) return yield* invalid
        const signIn = latest.value
        if (signIn.closed_at !== null || signIn.expires_at <= now) return yield* invalid
        if (!safeEqual(codeHash(signIn.id, code), signIn.code_hash)) {
          const attempts = yield* repo.addAttempt(signIn.id)
          if (attempts >= maxWrongCodes) yield* repo.close(signIn.id, now, "too_many_attempts")
          return yield* invalid
        }
        return yield* complete(signIn, sessionUser)
      }),
    /**
     * Follows a magic link: `none` when it is unknown, used, expired, opened in another browser, or
     * (a linking link) without its user's session; `identity_in_use` when the address is taken.
     */
    followLink: <E>(token: string | undefined, state: string | undefined, sessionUser: SessionUser<E>) =>
      Effect.gen(function*() {
        if (token === undefined || state === undefined || !mail.available) return Option.none<Verified>()
        const now = yield* Clock.currentTimeMillis
        const found = yield* repo.findByLinkTokenHash(sha256(token))
        if (Option.isNone(found)) return Option.none<Verified>()
        const signIn = found.value
        if (signIn.closed_at !== null || signIn.expires_at <= now) return Option.none<Verified>()
        if (!safeEqual(sha256(state), signIn.state_hash)) return Option.none<Verified>()
        return yield* complete(signIn, sessionUser).pipe(
          Effect.map(Option.some),
          Effect.catchIf(
            (error): error is Exclude<typeof error, IdentityInUse> =>
              (error as { _tag?: string })._tag !== "identity_in_use",
            () => Effect.succeed(Option.none<Verified>())
          )
        )
      })
  }
})

export class EmailSignIn extends Context.Tag("svc/identity/EmailSignIn")<
  EmailSignIn,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(EmailSignIn, make)
}
