/**
 * Browser sessions: an opaque token in the `svc_session` cookie and a CSRF token in `svc_csrf`
 * (double submit: the `x-csrf-token` header must repeat the cookie, and its hash is stored with
 * the session, so a token from another session never passes; Authenticate checks it).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { randomToken, sha256 } from "../kernel/crypto/Tokens.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { Organizations } from "../organizations/Organizations.js"
import { type SessionRow, SessionsRepo } from "./SessionsRepo.js"

export const sessionLifetimeMillis = 30 * 24 * 3600_000

export interface NewSession {
  readonly row: SessionRow
  readonly token: string
  readonly csrf: string
}

const make = Effect.gen(function*() {
  const repo = yield* SessionsRepo
  const organizations = yield* Organizations
  return {
    create: (userId: string, activeOrganizationId: string | null) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const token = randomToken()
        const csrf = randomToken()
        const row: SessionRow = {
          id: uuidv7(),
          token_hash: sha256(token),
          csrf_hash: sha256(csrf),
          user_id: userId,
          active_organization_id: activeOrganizationId,
          authenticated_at: now,
          created_at: now,
          expires_at: now + sessionLifetimeMillis,
          revoked_at: null
        }
        yield* repo.insert(row)
        return { row, token, csrf } satisfies NewSession
      }),
    /** The live session holding this token, if any. */
    find: (token: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const row = yield* repo.findByTokenHash(sha256(token))
        return Option.filter(row, (session) => session.revoked_at === null && session.expires_at > now)
      }),
    revoke: (id: string) => Effect.flatMap(Clock.currentTimeMillis, (now) => repo.revoke(id, now)),
    /** Sessions that had this organization active (of one user, or of all) have none any more: they left it. */
    forgetOrganization: (organizationId: string, userId: string | null) =>
      repo.clearActiveOrganization(organizationId, userId),
    /** The organization the session acts in without X-Organization-ID: one of the user's, or none. */
    setActiveOrganization: (session: { readonly id: string; readonly userId: string }, organizationId: string | null) =>
      Effect.gen(function*() {
        if (organizationId !== null && Option.isNone(yield* organizations.membership(organizationId, session.userId))) {
          return yield* new ResourceNotFound({ detail: "Organization not found" })
        }
        yield* repo.setActiveOrganization(session.id, organizationId)
      })
  }
})

export class Sessions extends Context.Tag("svc/identity/Sessions")<Sessions, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Sessions, make)
}
