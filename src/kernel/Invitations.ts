/**
 * The port sign-up asks "does this address hold an open invitation?" (an address that does may
 * always create its account, whatever `SVC_SIGNUP` says). The members area fills it; until then
 * no address holds one.
 */
import { Context, Effect, Layer } from "effect"

export interface OpenInvitationsShape {
  /** Whether an invitation to `email` (compared case-insensitively) is pending and unexpired. */
  readonly heldBy: (email: string) => Effect.Effect<boolean>
}

export class OpenInvitations
  extends Context.Tag("svc/kernel/OpenInvitations")<OpenInvitations, OpenInvitationsShape>()
{
  static readonly none = Layer.succeed(OpenInvitations, { heldBy: () => Effect.succeed(false) })
}
