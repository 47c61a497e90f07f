/**
 * Email sign-in: a 6-digit code and a magic link in one message, valid ten minutes, superseded by a
 * newer request, closed after a bounded number of wrong codes. The link works only in the browser
 * holding the `svc_email_state` cookie set by the start request, so mail scanners that open links
 * do not use it up (extensions.md §12).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { randomToken, safeEqual, sha256, sixDigitCode } from "../kernel/crypto/Tokens.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { RateLimiter } from "../kernel/http/RateLimiter.js"
import { Mail } from "../kernel/mail/Mail.js"
import { Accounts, normalizeEmail } from "./Accounts.js"
import { type EmailSignInRow, EmailSignInsRepo } from "./EmailSignInsRepo.js"
import { EmailUnavailable, InvalidCode, UnsupportedProvider } from "./Errors.js"

export const EMAIL_STATE_COOKIE = "svc_email_state"
export const codeLifetimeMillis = 10 * 60_000
export const maxWrongCodes = 5

const window = 15 * 60_000
export const limits = {
  startPerAddress: { limit: 5, windowMillis: window },
  startPerClient: { limit: 30, windowMillis: window },
  verifyPerAddress: { limit: 20, windowMillis: window }
}

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

  const message = (to: string, code: string, token: string) => {
    const link = `${config.baseUrl}/v1/auth/email/callback?token=${encodeURIComponent(token)}`
    return {
      to,
      subject: `Your svc sign-in code: ${code}`,
      text: `Your sign-in code is ${code}\n\nOr open this link in the same browser to sign in:\n${link}\n\n` +
        `The code and the link work once, within ten minutes. If you did not ask to sign in, ignore this message.\n`,
      html: `<p>Your sign-in code is <strong>${code}</strong></p>` +
        `<p>Or <a href="${link}">sign in with this link</a> in the same browser.</p>` +
        `<p>The code and the link work once, within ten minutes.</p>`
    }
  }

  return {
    /** Sends a code and a link; returns the browser state to set as `svc_email_state`. */
    start: (rawEmail: string, returnTo: string | null | undefined, client: string) =>
      Effect.gen(function*() {
        yield* ensureCanSend
        const email = normalizeEmail(rawEmail)
        yield* rateLimiter.consume(`email-start:client:${client}`, limits.startPerClient)
        yield* rateLimiter.consume(`email-start:address:${email}`, limits.startPerAddress)
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
          closed_reason: null
        }
        yield* repo.start(row)
        yield* mail.send(message(email, code, token)).pipe(
          Effect.tapError((error) => Effect.logWarning("sign-in email not sent", error.cause)),
          // A code nobody received must not stay usable.
          Effect.tapError(() => repo.close(id, now, "not_sent")),
          Effect.mapError(() => new EmailUnavailable({ detail: "The sign-in email could not be sent" }))
        )
        return { state }
      }),
    /** Checks a code; on success the user exists and their sign-in is returned. */
    verify: (rawEmail: string, code: string) =>
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
        if (!(yield* repo.close(signIn.id, now, "used"))) return yield* invalid
        return { ...(yield* accounts.signIn(email)), returnTo: signIn.return_to }
      }),
    /** Follows a magic link; `none` when it is unknown, used, expired or opened in another browser. */
    followLink: (token: string | undefined, state: string | undefined) =>
      Effect.gen(function*() {
        if (token === undefined || state === undefined || !mail.available) return Option.none()
        const now = yield* Clock.currentTimeMillis
        const found = yield* repo.findByLinkTokenHash(sha256(token))
        if (Option.isNone(found)) return Option.none()
        const signIn = found.value
        if (signIn.closed_at !== null || signIn.expires_at <= now) return Option.none()
        if (!safeEqual(sha256(state), signIn.state_hash)) return Option.none()
        if (!(yield* repo.close(signIn.id, now, "used"))) return Option.none()
        return Option.some({ ...(yield* accounts.signIn(signIn.email)), returnTo: signIn.return_to })
      })
  }
})

export class EmailSignIn extends Context.Tag("svc/services/EmailSignIn")<
  EmailSignIn,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(EmailSignIn, make)
}
