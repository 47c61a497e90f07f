/**
 * The one authentication of svc: the API's middleware (AuthorizationLive), the port proxy and the
 * raw routes (WebSocket terminals, receivers) all ask it who a request is and whether it may act.
 * It reads only a request's method, headers and cookies, so a raw Node request works as well as an
 * HttpServerRequest, and it reaches keys, sessions and memberships through the Credentials port.
 */
import * as Cookies from "@effect/platform/Cookies"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import type * as NodeHttp from "node:http"
import { AppConfig } from "../config/AppConfig.js"
import { safeEqual, sha256 } from "../crypto/Tokens.js"
import { type AccessCode, isMutatingMethod, keyAccess, type Role, roleAllowed } from "../domain/Access.js"
import { uuidPattern } from "../domain/Ids.js"
import { OrganizationStanding } from "../OrganizationStanding.js"
import type { CallerShape, Credential } from "./Authorization.js"
import { Credentials, type SessionFound } from "./Credentials.js"
import {
  CsrfInvalid,
  Forbidden,
  InsufficientScope,
  InvalidApiKey,
  InvalidRequest,
  OrganizationMismatch,
  OrganizationSuspended,
  ResourceNotFound,
  SessionRequired,
  Unauthenticated
} from "./Errors.js"

export const SESSION_COOKIE = "svc_session"
export const CSRF_COOKIE = "svc_csrf"
export const CSRF_HEADER = "x-csrf-token"
export const ORGANIZATION_HEADER = "x-organization-id"
export const OPERATOR_TOKEN_HEADER = "x-svc-operator-token"

/** What Authenticate reads of a request. An HttpServerRequest is one as it is; Node's through `fromNode`. */
export interface RequestFacts {
  readonly method: string
  /** Lower-case names, as both servers give them. */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly cookies: Readonly<Record<string, string>>
  /** A protocol upgrade (WebSocket): a change, whatever its method. */
  readonly upgrading?: boolean | undefined
}

/** A raw Node request as RequestFacts; its cookies are parsed when first read. */
export const fromNode = (request: NodeHttp.IncomingMessage, upgrading = false): RequestFacts => {
  let cookies: Record<string, string> | undefined
  return {
    method: request.method ?? "GET",
    headers: request.headers,
    get cookies() {
      return cookies ??= Cookies.parseHeader(request.headers.cookie ?? "")
    },
    upgrading
  }
}

export const headerOf = (request: RequestFacts, name: string): string | undefined => {
  const value = request.headers[name]
  return typeof value === "string" ? value : undefined
}

/**
 * Where a route's organization comes from:
 * - `header`: X-Organization-ID ([ORG]); an API key fixes it (the header may repeat it), a session must send it;
 * - `{ path }`: the organization a path names (X-Organization-ID, if sent, must still be a UUID);
 * - `{ resource }`: the organization owning what a raw route reaches (a machine's port); the header
 *   is not svc's there and is ignored.
 */
export type OrganizationSource = "none" | "header" | { readonly path: string } | { readonly resource: string }

interface RequirementBase {
  readonly access: AccessCode
  /**
   * How a session shows that a change comes from svc's own pages: the double-submit CSRF token
   * (the API; the default), or a same-site request by Fetch Metadata or Origin (routes a browser
   * opens directly, where no header can be added: the port proxy, WebSockets).
   */
  readonly sessionGuard?: "csrf_token" | "same_site" | undefined
  /**
   * A suspended organization is refused it (`403 organization_suspended`): the routes that run or
   * make machines (Policy.ts `refusedWhileSuspended`; raw routes say so themselves).
   */
  readonly refusedWhileSuspended?: boolean | undefined
}

/** What a route asks of its caller; one acting in an organization names the roles it allows there. */
export type Requirement =
  | RequirementBase & { readonly organization: "none"; readonly roles?: undefined }
  | RequirementBase & {
    readonly organization: Exclude<OrganizationSource, "none">
    /** Checked against the caller's role now (a key acts with its creator's current role). */
    readonly roles: ReadonlyArray<Role>
  }

export type AuthenticationError =
  | Unauthenticated
  | InvalidApiKey
  | Forbidden
  | InsufficientScope
  | CsrfInvalid
  | OrganizationMismatch
  | SessionRequired
  | ResourceNotFound
  | InvalidRequest
  | OrganizationSuspended

/** The double submit bound to the session: the header repeats the cookie, and its hash is the session's. */
export const csrfValid = (session: SessionFound, header: string | undefined, cookie: string | undefined) =>
  header !== undefined && cookie !== undefined && safeEqual(header, cookie) &&
  safeEqual(sha256(header), session.csrfHash)

/** Whether the request changes something: a session needs its guard for it. */
const changes = (request: RequestFacts) => request.upgrading === true || isMutatingMethod(request.method)

const anonymous: CallerShape = { user: Option.none(), credential: Option.none(), organization: Option.none() }

/** What an API key's lookup already knows of its creator (a session looks it up separately). */
interface Owner {
  readonly email: Option.Option<string>
  readonly role: Option.Option<Role>
}

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const credentials = yield* Credentials
  const standing = yield* OrganizationStanding
  const ownOrigin = new URL(config.baseUrl).origin

  /** A request another site's page made (Fetch Metadata, else the Origin header). */
  const crossSite = (request: RequestFacts) => {
    const site = headerOf(request, "sec-fetch-site")
    if (site !== undefined) return site === "cross-site"
    const origin = headerOf(request, "origin")
    return origin !== undefined && origin !== ownOrigin
  }

  const operator = (request: RequestFacts) =>
    Effect.gen(function*() {
      if (Option.isNone(config.operatorToken)) return yield* new ResourceNotFound({ detail: "Not found" })
      const given = headerOf(request, OPERATOR_TOKEN_HEADER)
      if (given === undefined || !safeEqual(given, Redacted.value(config.operatorToken.value))) {
        return yield* new Unauthenticated({ detail: "A valid X-Svc-Operator-Token is required" })
      }
      return anonymous
    })

  /** The user and credential behind the request, checked against the route's access code. */
  const identify = (request: RequestFacts, requirement: Requirement) =>
    Effect.gen(function*() {
      const authorization = headerOf(request, "authorization")
      if (authorization !== undefined) {
        const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
        if (match === null) return yield* new InvalidApiKey({ detail: "Expected Authorization: Bearer <API key>" })
        const key = yield* credentials.apiKey(match[1]!)
        const access = keyAccess(requirement.access, key.preset)
        if (access === "session_required") {
          return yield* new SessionRequired({ detail: "This route needs a browser session; API keys are refused" })
        }
        if (access === "insufficient_scope") {
          return yield* new InsufficientScope({ detail: `The key's preset ${key.preset} does not allow this route` })
        }
        const credential: Credential = {
          kind: "api_key",
          id: key.id,
          preset: key.preset,
          organizationId: key.organizationId
        }
        // The key's lookup brought its creator's address and role in the key's organization along.
        const owner: Owner = { email: key.ownerEmail, role: key.ownerRole }
        return { userId: key.userId, credential, owner }
      }
      const token = request.cookies[SESSION_COOKIE]
      if (token === undefined) return yield* new Unauthenticated({ detail: "Sign in or send an API key" })
      const session = yield* credentials.session(token)
      if (Option.isNone(session)) {
        return yield* new Unauthenticated({ detail: "The session has ended; sign in again" })
      }
      if (
        requirement.sessionGuard !== "same_site" && changes(request) &&
        !csrfValid(session.value, headerOf(request, CSRF_HEADER), request.cookies[CSRF_COOKIE])
      ) {
        return yield* new CsrfInvalid({ detail: `Send the ${CSRF_COOKIE} cookie's value in ${CSRF_HEADER}` })
      }
      const credential: Credential = {
        kind: "session",
        id: session.value.id,
        activeOrganizationId: session.value.activeOrganizationId,
        authenticatedAt: session.value.authenticatedAt
      }
      return { userId: session.value.userId, credential, owner: undefined }
    })

  /**
   * The organization a path names, checked like an [ORG] header route (api.md "Organization context"):
   * a key's header must name the key's organization (`organization_mismatch`), and a path elsewhere
   * is not found; a session sends the header on every organization-scoped request, naming the path's
   * organization (the same rule as [ORG]: a page never acts on an organization it did not name).
   */
  const fromPath = (path: string, header: string | undefined, credential: Credential) =>
    Effect.gen(function*() {
      if (credential.kind === "api_key") {
        if (header !== undefined && header !== credential.organizationId) {
          return yield* new OrganizationMismatch({ detail: "X-Organization-ID differs from the key's organization" })
        }
        if (credential.organizationId !== path) return yield* new ResourceNotFound({ detail: "Organization not found" })
        return path
      }
      if (header === undefined) {
        return yield* new InvalidRequest({
          detail: "Send X-Organization-ID with a browser session",
          field_errors: [{ field: "X-Organization-ID", message: "is required with a browser session" }]
        })
      }
      if (header !== path) {
        return yield* new OrganizationMismatch({
          detail: "X-Organization-ID differs from the organization in the path"
        })
      }
      return path
    })

  /** The organization the route acts on, per api.md's X-Organization-ID rules. */
  const organizationOf = (request: RequestFacts, source: Exclude<OrganizationSource, "none">, credential: Credential) =>
    Effect.gen(function*() {
      if (typeof source === "object" && "resource" in source) {
        if (credential.kind === "api_key" && credential.organizationId !== source.resource) {
          return yield* new ResourceNotFound({ detail: "Organization not found" })
        }
        return source.resource
      }
      const header = headerOf(request, ORGANIZATION_HEADER)
      if (header !== undefined && !uuidPattern.test(header)) {
        return yield* new InvalidRequest({
          field_errors: [{ field: "X-Organization-ID", message: "must be a UUID" }]
        })
      }
      if (source !== "header") return yield* fromPath(source.path.toLowerCase(), header?.toLowerCase(), credential)
      if (credential.kind === "api_key") {
        if (header !== undefined && header.toLowerCase() !== credential.organizationId) {
          return yield* new OrganizationMismatch({ detail: "X-Organization-ID differs from the key's organization" })
        }
        return credential.organizationId
      }
      // A session names its organization on every [ORG] request: a page open in two tabs on two
      // organizations must never act in the one chosen last (the active organization is the pages' default).
      if (header === undefined) {
        return yield* new InvalidRequest({
          detail: "Send X-Organization-ID with a browser session",
          field_errors: [{ field: "X-Organization-ID", message: "is required with a browser session" }]
        })
      }
      return header.toLowerCase()
    })

  const callerOf = (request: RequestFacts, requirement: Requirement) =>
    Effect.gen(function*() {
      if (requirement.access === "N") return anonymous
      if (requirement.access === "O") return yield* operator(request)
      const { credential, owner, userId } = yield* identify(request, requirement)
      const email = owner?.email ?? Option.map(yield* credentials.user(userId), (user) => user.email)
      if (Option.isNone(email)) return yield* new Unauthenticated({ detail: "The user no longer exists" })
      const caller: CallerShape = {
        user: Option.some({ id: userId, email: email.value }),
        credential: Option.some(credential),
        organization: Option.none()
      }
      if (requirement.organization === "none") return caller
      const organizationId: string = yield* organizationOf(request, requirement.organization, credential)
      // A key acts only in its own organization (organizationOf), so its owner's role there is the one.
      const role = owner?.role ?? (yield* credentials.membership(organizationId, userId))
      if (Option.isNone(role)) {
        return yield* credential.kind === "api_key"
          ? new Forbidden({ detail: "The key's owner is no longer a member of its organization" })
          : new ResourceNotFound({ detail: "Organization not found" })
      }
      if (!roleAllowed(role.value, requirement.roles)) {
        return yield* new Forbidden({
          detail: `This route is for the roles ${requirement.roles.join(", ")}; ` +
            (credential.kind === "api_key" ? `the key's creator is ${role.value}` : `yours is ${role.value}`)
        })
      }
      if (requirement.refusedWhileSuspended === true && (yield* standing.suspended(organizationId))) {
        return yield* new OrganizationSuspended({
          detail: "The organization is suspended: machines cannot be started, used or created; reads still work"
        })
      }
      return { ...caller, organization: Option.some({ id: organizationId, role: role.value }) }
    })

  /**
   * The same-site guard runs last, once the session is known to be allowed everything else, so that a
   * session that may not act anyway gets the same answer from any site.
   */
  const sameSite = (request: RequestFacts) => (caller: CallerShape) =>
    Option.isSome(caller.credential) && caller.credential.value.kind === "session" && changes(request) &&
      crossSite(request)
      ? Effect.fail(new CsrfInvalid({ detail: "A session changes things only from svc's own site" }))
      : Effect.void

  /** The caller of `request` if it meets `requirement`; else the 401/403/404/422 of api.md. */
  const authenticate = (
    request: RequestFacts,
    requirement: Requirement
  ): Effect.Effect<CallerShape, AuthenticationError> =>
    requirement.sessionGuard === "same_site"
      ? Effect.tap(callerOf(request, requirement), sameSite(request))
      : callerOf(request, requirement)

  return { authenticate }
})

export class Authenticate extends Context.Tag("svc/kernel/Authenticate")<
  Authenticate,
  Effect.Effect.Success<typeof make>
>() {
  /**
   * Over the Credentials port (the identity area fills it), OrganizationStanding (the operator area)
   * and AppConfig (operator token, own origin).
   */
  static readonly layer = Layer.effect(Authenticate, make)
}
