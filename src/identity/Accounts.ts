/**
 * Users and their organizations: the first verified sign-in of a new address creates the user when
 * the sign-up policy lets it (`SVC_SIGNUP=open`, or the address holds an open invitation) and, when
 * they belong nowhere and hold no invitation, an organization they own (extensions.md §2); bootstrap
 * does the same from the command line and mints a full-access key. A user may sign in through
 * further identities: OIDC subjects and linked addresses (IdentitiesRepo).
 */
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { OpenInvitations } from "../kernel/Invitations.js"
import { Organizations } from "../organizations/Organizations.js"
import { ApiKeys } from "./ApiKeys.js"
import { IdentityInUse } from "./Errors.js"
import { EMAIL_PROVIDER, IdentitiesRepo } from "./IdentitiesRepo.js"
import { type UserRow, UsersRepo } from "./UsersRepo.js"

export const normalizeEmail = (email: string) => email.trim().toLowerCase()

const defaultOrganizationName = (email: string) => `${email.split("@")[0] ?? email}'s organization`

/** A new address that the sign-up policy does not let create an account. */
export class SignUpRefused extends Data.TaggedError("SignUpRefused")<{ readonly email: string }> {}

/** What an OIDC provider says about who signed in. */
export interface ProviderIdentity {
  readonly provider: string
  readonly subject: string
  /** Only a verified address may find or create a user. */
  readonly email: string | undefined
  readonly emailVerified: boolean
}

/** A signed-in user and the organization their session starts in (none while they belong nowhere). */
export interface SignedIn {
  readonly user: UserRow
  readonly organizationId: string | null
}

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const users = yield* UsersRepo
  const identities = yield* IdentitiesRepo
  const organizations = yield* Organizations
  const apiKeys = yield* ApiKeys
  const invitations = yield* OpenInvitations

  /** Whether a new address may create its account: always with an open invitation. */
  const mayCreate = (email: string) => config.signup === "open" ? Effect.succeed(true) : invitations.heldBy(email)

  const userOfAddress = (email: string) =>
    Effect.flatMap(
      identities.userOfAddress(normalizeEmail(email)),
      (id) => Option.isNone(id) ? Effect.succeed(Option.none<UserRow>()) : users.findById(id.value)
    )

  /** The organization a session starts in: the user's first, else one of their own unless invited. */
  const startingOrganization = (user: UserRow) =>
    Effect.gen(function*() {
      const memberships = yield* organizations.organizationsOf(user.id)
      if (memberships.length > 0) return memberships[0]!.organization_id
      if (yield* invitations.heldBy(user.email)) return null
      const now = yield* Clock.currentTimeMillis
      return (yield* organizations.createWithOwner(defaultOrganizationName(user.email), user.id, now)).id
    })

  const signedIn = (user: UserRow) =>
    Effect.gen(function*() {
      const organizationId = yield* startingOrganization(user)
      yield* users.touchSignIn(user.id, yield* Clock.currentTimeMillis)
      return { user, organizationId } satisfies SignedIn
    })

  /** The user of a verified address, created if new and the sign-up policy allows it. */
  const userForAddress = (rawEmail: string) =>
    Effect.gen(function*() {
      const email = normalizeEmail(rawEmail)
      const existing = yield* userOfAddress(email)
      if (Option.isSome(existing)) return existing.value
      if (!(yield* mayCreate(email))) return yield* new SignUpRefused({ email })
      return (yield* users.ensure(email, yield* Clock.currentTimeMillis)).user
    })

  /** Links `provider`/`subject` to `userId`; `identity_in_use` when it is another user's. */
  const link = (userId: string, provider: string, subject: string, email: string | null) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* identities.insert({ provider, subject, user_id: userId, email, created_at: now })
      // Linked now, before, or (a race) by another request: whoever holds it is the answer.
      const holder = yield* identities.find(provider, subject)
      if (Option.isSome(holder) && holder.value.user_id !== userId) {
        return yield* new IdentityInUse({ detail: "This sign-in is already linked to another account" })
      }
    })

  return {
    mayCreate,
    /** Whether an address belongs to a user already (as their own or linked). */
    addressKnown: (email: string) => Effect.map(userOfAddress(email), Option.isSome),
    /** A verified e-mail sign-in: the user (created if new and allowed) and where their session starts. */
    signIn: (email: string) => Effect.flatMap(userForAddress(email), signedIn),
    /**
     * An OIDC sign-in: the user linked to (provider, subject), else the user of the verified
     * address (then linked), else a new user (sign-up policy permitting, and only with a verified
     * address: svc reaches its users by e-mail).
     */
    signInWithProvider: (identity: ProviderIdentity) =>
      Effect.gen(function*() {
        const linked = yield* identities.find(identity.provider, identity.subject)
        if (Option.isSome(linked)) {
          const user = yield* users.findById(linked.value.user_id)
          if (Option.isSome(user)) return yield* signedIn(user.value)
        }
        if (identity.email === undefined || !identity.emailVerified) {
          return yield* new SignUpRefused({ email: identity.email ?? "" })
        }
        const user = yield* userForAddress(identity.email)
        yield* link(user.id, identity.provider, identity.subject, normalizeEmail(identity.email))
        return yield* signedIn(user)
      }),
    /** Links an OIDC identity to a signed-in user. */
    linkProvider: (userId: string, identity: ProviderIdentity) =>
      link(userId, identity.provider, identity.subject, identity.email === undefined ? null : identity.email),
    /** Links a verified address to a signed-in user; `identity_in_use` when it is another user's. */
    linkAddress: (userId: string, rawEmail: string) =>
      Effect.gen(function*() {
        const email = normalizeEmail(rawEmail)
        const owner = yield* identities.userOfAddress(email)
        if (Option.isSome(owner)) {
          if (owner.value === userId) return
          return yield* new IdentityInUse({ detail: "This address belongs to another account" })
        }
        yield* link(userId, EMAIL_PROVIDER, email, email)
      }),
    identitiesOf: identities.ofUser,
    /** `svc admin bootstrap`: the user, an organization they own, and a new full_access key. */
    bootstrap: (email: string, organizationName?: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const { user } = yield* users.ensure(normalizeEmail(email), now)
        const owned = yield* organizations.ownedBy(user.id)
        const organizationId = Option.isSome(owned)
          ? owned.value.id
          : (yield* organizations.createWithOwner(
            organizationName ?? defaultOrganizationName(user.email),
            user.id,
            now
          ))
            .id
        const key = yield* apiKeys.mint({
          organizationId,
          userId: user.id,
          name: "bootstrap",
          preset: "full_access",
          expiresInDays: 365
        })
        return { user_id: user.id, organization_id: organizationId, api_key: key.secret }
      }),
    findUser: users.findById,
    /** Each user's address, by id (those not found are left out). */
    addressesOf: users.addresses,
    /** The id of the user an address belongs to, as their own or linked (an invitation's invitee). */
    userIdOfAddress: (email: string) => identities.userOfAddress(normalizeEmail(email)),
    membership: organizations.membership
  }
})

export class Accounts extends Context.Tag("svc/identity/Accounts")<Accounts, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Accounts, make)
}
