/**
 * The identity area: sign-in, sessions, accounts and API keys over their repositories (provided
 * here only), and the kernel's Credentials port over them, with Authenticate on top of it.
 */
import { Effect, Layer, Option } from "effect"
import { Authenticate } from "../kernel/http/Authenticate.js"
import { Credentials, type CredentialsShape } from "../kernel/http/Credentials.js"
import * as Sweeps from "../kernel/sql/Sweeps.js"
import { Organizations } from "../organizations/Organizations.js"
import { Accounts } from "./Accounts.js"
import { ApiKeys } from "./ApiKeys.js"
import { ApiKeysRepo } from "./ApiKeysRepo.js"
import { DeviceAuthorizationsRepo } from "./DeviceAuthorizationsRepo.js"
import { DeviceGrant } from "./DeviceGrant.js"
import { EmailSignIn } from "./EmailSignIn.js"
import { EmailSignInsRepo } from "./EmailSignInsRepo.js"
import { IdentitiesRepo } from "./IdentitiesRepo.js"
import { OidcSignIn } from "./OidcSignIn.js"
import { OidcSignInsRepo } from "./OidcSignInsRepo.js"
import { Sessions } from "./Sessions.js"
import { SessionsRepo } from "./SessionsRepo.js"
import { SignInMethods } from "./SignInMethods.js"
import { UsersRepo } from "./UsersRepo.js"

/** What Authenticate asks of identity: keys, sessions and users here, memberships from Organizations. */
const CredentialsLive = Layer.effect(
  Credentials,
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    const sessions = yield* Sessions
    const accounts = yield* Accounts
    const organizations = yield* Organizations
    const credentials: CredentialsShape = {
      apiKey: (text) =>
        Effect.map(apiKeys.authenticate(text), (key) => ({
          id: key.id,
          preset: key.preset,
          organizationId: key.organization_id,
          userId: key.created_by,
          ownerEmail: Option.fromNullable(key.owner_email),
          ownerRole: Option.fromNullable(key.owner_role)
        })),
      session: (token) =>
        Effect.map(sessions.find(token), (found) =>
          Option.map(found, (session) => ({
            id: session.id,
            userId: session.user_id,
            activeOrganizationId: session.active_organization_id,
            authenticatedAt: session.authenticated_at,
            csrfHash: session.csrf_hash
          }))),
      user: accounts.findUser,
      membership: (organizationId, userId) =>
        Effect.map(organizations.membership(organizationId, userId), Option.map((membership) => membership.role))
    }
    return credentials
  })
)

const ServicesLive = Layer.mergeAll(EmailSignIn.layer, OidcSignIn.layer, SignInMethods.layer, DeviceGrant.layer).pipe(
  Layer.provideMerge(Accounts.layer),
  Layer.provideMerge(Layer.mergeAll(ApiKeys.layer, Sessions.layer)),
  Layer.provide(
    Layer.mergeAll(
      UsersRepo.layer,
      SessionsRepo.layer,
      EmailSignInsRepo.layer,
      ApiKeysRepo.layer,
      IdentitiesRepo.layer,
      OidcSignInsRepo.layer,
      DeviceAuthorizationsRepo.layer
    )
  )
)

export const IdentityLive = Authenticate.layer.pipe(
  Layer.provideMerge(CredentialsLive),
  Layer.provideMerge(ServicesLive)
)

const day = 24 * 3600_000

/**
 * Sessions past their expiry and email sign-ins a day past theirs are deleted every hour: a worker,
 * so the server's (App.ts), not IdentityLive's, which the offline commands build.
 */
export const IdentitySweepLive = Sweeps.hourly("sessions and sign-ins", (now) =>
  Effect.gen(function*() {
    yield* (yield* SessionsRepo).deleteExpired(now)
    yield* (yield* EmailSignInsRepo).deleteExpiredBefore(now - day)
  })).pipe(Layer.provide(Layer.mergeAll(SessionsRepo.layer, EmailSignInsRepo.layer)))
