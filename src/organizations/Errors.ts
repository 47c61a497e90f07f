/** The organizations area's errors: members, invitations, ownership and deletion (api.md error codes). */
import { ProblemError } from "../kernel/http/Problem.js"

export class LastOwner extends ProblemError<LastOwner>()("last_owner", 409, "The organization's last owner") {}

export class AlreadyMember extends ProblemError<AlreadyMember>()("already_member", 409, "Already a member") {}

export class InvitationEmailMismatch extends ProblemError<InvitationEmailMismatch>()(
  "invitation_email_mismatch",
  403,
  "The invitation is for another address"
) {}

export class InvitationClosed
  extends ProblemError<InvitationClosed>()("invitation_closed", 410, "The invitation is closed")
{}

export class InvitationsUnavailable extends ProblemError<InvitationsUnavailable>()(
  "invitations_unavailable",
  503,
  "Invitations are not available on this server"
) {}

/** The invitation e-mail could not be sent (502, unlike sign-in's 503 when mail is off); the invitation was revoked. */
export class InvitationNotSent
  extends ProblemError<InvitationNotSent>()("email_unavailable", 502, "The invitation e-mail could not be sent")
{}

export class RecentAuthRequired
  extends ProblemError<RecentAuthRequired>()("recent_auth_required", 403, "A recent sign-in is required")
{}

export class SubscriptionActive
  extends ProblemError<SubscriptionActive>()("subscription_active", 409, "A renewing plan is active")
{}
