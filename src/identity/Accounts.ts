/**
 * Users and their organizations: the first verified sign-in of a new address creates the user and,
 * when they belong nowhere, an organization they own (extensions.md §2); bootstrap does the same
 * from the command line and mints a full-access key.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { Organizations } from "../organizations/Organizations.js"
import { ApiKeys } from "./ApiKeys.js"
import { UsersRepo } from "./UsersRepo.js"

export const normalizeEmail = (email: string) => email.trim().toLowerCase()

const defaultOrganizationName = (email: string) => `${email.split("@")[0] ?? email}'s organization`

const make = Effect.gen(function*() {
  const users = yield* UsersRepo
  const organizations = yield* Organizations
  const apiKeys = yield* ApiKeys

  /** The user of this address, created if new, with an organization of their own if they have none. */
  const ensureUserWithOrganization = (email: string, organizationName?: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const { user } = yield* users.ensure(normalizeEmail(email), now)
      const memberships = yield* organizations.organizationsOf(user.id)
      const organization = memberships.length > 0
        ? Option.some({ id: memberships[0]!.organization_id })
        : Option.none()
      const organizationId = Option.isSome(organization)
        ? organization.value.id
        : (yield* organizations.createWithOwner(organizationName ?? defaultOrganizationName(user.email), user.id, now))
          .id
      return { user, organizationId }
    })

  return {
    /** A verified sign-in: the user, and the organization to make active. */
    signIn: (email: string) =>
      Effect.gen(function*() {
        const result = yield* ensureUserWithOrganization(email)
        yield* users.touchSignIn(result.user.id, yield* Clock.currentTimeMillis)
        return result
      }),
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
    findUserByEmail: (email: string) => users.findByEmail(normalizeEmail(email)),
    membership: organizations.membership
  }
})

export class Accounts extends Context.Tag("svc/services/Accounts")<Accounts, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Accounts, make)
}
