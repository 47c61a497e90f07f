/**
 * The port through which access that outlives a request is ended: terminal tickets and open
 * terminal WebSockets (and, later, other long-lived channels). Member removal calls `member`,
 * suspension calls `organization`. The terminals area fills it; until then there is nothing to end.
 */
import { Context, Effect, Layer } from "effect"

export interface Revoked {
  /** Unused terminal tickets made void. */
  readonly tickets_revoked: number
  /** Open terminal WebSockets (channels) closed. */
  readonly channels_revoked: number
}

export const nothingRevoked: Revoked = { tickets_revoked: 0, channels_revoked: 0 }

export interface AccessRevocationsShape {
  /** Ends what `userId` holds in the organization (they were removed from it). */
  readonly member: (organizationId: string, userId: string) => Effect.Effect<Revoked>
  /** Ends what anyone holds in the organization (it was suspended). */
  readonly organization: (organizationId: string) => Effect.Effect<Revoked>
}

export class AccessRevocations
  extends Context.Tag("svc/kernel/AccessRevocations")<AccessRevocations, AccessRevocationsShape>()
{
  static readonly none = Layer.succeed(AccessRevocations, {
    member: () => Effect.succeed(nothingRevoked),
    organization: () => Effect.succeed(nothingRevoked)
  })
}
