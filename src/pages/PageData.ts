/**
 * What svc knows about a page the console shows outside an organization (sign-in, device approval,
 * an invitation, the account), handed to the console in the document (`<meta name="svc-page">`,
 * escaped JSON: no inline script). The console's page views (console/src/pages/) read these types.
 */

export interface OrganizationChoice {
  readonly id: string
  readonly name: string
  readonly role: string
}

export interface SignInPageData {
  readonly page: "sign-in"
  /** A safe UI path to come back to (safeReturnTo). */
  readonly returnTo: string
  /** The `?error=` code as given; the console says known codes in words, others in general words. */
  readonly error: string | null
  readonly access: "open" | "invite_only"
  readonly waitlistUrl: string | null
  readonly providers: ReadonlyArray<{ readonly name: string; readonly display_name: string; readonly kind: string }>
  readonly signedInAs: string | null
}

export interface DevicePageData {
  readonly page: "device"
  readonly email: string
  /** The code as typed, when one was. */
  readonly typed: string | null
  /** The pending request it names; null when there is none (unknown, expired, decided). */
  readonly request: {
    readonly userCode: string
    readonly clientName: string
    readonly requestedScope: string
    readonly defaultKeyName: string
  } | null
  /** Why the code could not be looked up: `rate_limited` or `unknown`. */
  readonly problem: "rate_limited" | "unknown" | null
  readonly organizations: ReadonlyArray<OrganizationChoice>
}

export interface InvitationPageData {
  readonly page: "invitation"
  readonly signedInAs: string
  readonly token: string
  /** None when no invitation has this token (or its organization was deleted). */
  readonly invitation: {
    readonly organizationName: string
    readonly email: string
    readonly role: string
    readonly expiresAt: number
    readonly state: "open" | "accepted" | "revoked" | "expired"
    /** The invited address is one the viewer signs in with. */
    readonly forViewer: boolean
  } | null
}

export interface AccountPageData {
  readonly page: "account"
  readonly email: string
  readonly organizations: ReadonlyArray<OrganizationChoice>
  /** The further ways to sign in as this user (linked addresses and providers), in words. */
  readonly identities: ReadonlyArray<string>
  /** Providers that can still be linked. */
  readonly providers: ReadonlyArray<{ readonly name: string; readonly display_name: string }>
  readonly emailAvailable: boolean
}

export type PageData = SignInPageData | DevicePageData | InvitationPageData | AccountPageData
