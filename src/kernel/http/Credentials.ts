/**
 * The port Authenticate reads credentials through: the kernel knows how a request proves who it is,
 * the identity area knows which keys, sessions, users and memberships exist (src/identity/Live.ts).
 */
import { Context, type Effect, type Option } from "effect"
import type { Preset, Role } from "../domain/Access.js"
import type { InvalidApiKey } from "./Errors.js"

/** A live API key, with what a request needs of its creator (one lookup on the hot path). */
export interface ApiKeyFound {
  readonly id: string
  readonly preset: Preset
  readonly organizationId: string
  /** The key's creator: the user it acts as. */
  readonly userId: string
  /** The creator's address; none when they no longer exist. */
  readonly ownerEmail: Option.Option<string>
  /** The creator's current role in the key's organization; none when they are no longer a member. */
  readonly ownerRole: Option.Option<Role>
}

/** A live browser session. */
export interface SessionFound {
  readonly id: string
  readonly userId: string
  readonly activeOrganizationId: string | null
  readonly authenticatedAt: number
  /** SHA-256 of the session's CSRF token. */
  readonly csrfHash: string
}

export interface CredentialsShape {
  /** The live key this text names; malformed, unknown, revoked and expired keys fail alike. */
  readonly apiKey: (text: string) => Effect.Effect<ApiKeyFound, InvalidApiKey>
  /** The live (not revoked, not expired) session holding this token. */
  readonly session: (token: string) => Effect.Effect<Option.Option<SessionFound>>
  readonly user: (id: string) => Effect.Effect<Option.Option<{ readonly id: string; readonly email: string }>>
  /** The user's role in the organization; none when they are not a member. */
  readonly membership: (organizationId: string, userId: string) => Effect.Effect<Option.Option<Role>>
}

export class Credentials extends Context.Tag("svc/kernel/Credentials")<Credentials, CredentialsShape>() {}
