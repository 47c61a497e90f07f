/**
 * The authorization middleware: finds the endpoint's Policy, authenticates the caller (API key,
 * session with CSRF, or operator token), resolves the organization and checks the role. Everything
 * a route needs to know about its caller arrives as `Caller`; handlers hold no auth logic.
 */
import { HttpRouter, HttpServerRequest } from "@effect/platform"
import type { HttpApiEndpoint } from "@effect/platform"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { Api } from "../../Api.js"
import { Accounts } from "../../identity/Accounts.js"
import { ApiKeys } from "../../identity/ApiKeys.js"
import { CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE, Sessions } from "../../identity/Sessions.js"
import { AppConfig } from "../config/AppConfig.js"
import { safeEqual } from "../crypto/Tokens.js"
import { isMutatingMethod, keyAccess, type Role, roleAllowed } from "../domain/Access.js"
import { uuidPattern } from "../domain/Ids.js"
import { Authorization, type CallerShape, type Credential } from "./Authorization.js"
import {
  CsrfInvalid,
  Forbidden,
  InsufficientScope,
  InvalidApiKey,
  InvalidRequest,
  OrganizationMismatch,
  ResourceNotFound,
  SessionRequired,
  Unauthenticated
} from "./Errors.js"
import { Policy, type PolicySpec } from "./Policy.js"

/** "METHOD /path/:param" of every endpoint to its policy; an endpoint without one is a defect. */
export const policyIndex = (api: typeof Api) => {
  const index = new Map<string, PolicySpec>()
  for (const group of Object.values(api.groups)) {
    for (const endpoint of Object.values(group.endpoints) as Array<HttpApiEndpoint.HttpApiEndpoint.AnyWithProps>) {
      const spec = Context.getOption(endpoint.annotations, Policy)
      if (Option.isNone(spec)) throw new Error(`endpoint ${endpoint.name} has no Policy annotation`)
      index.set(`${endpoint.method} ${endpoint.path}`, spec.value)
    }
  }
  return index
}

/** What an API key's lookup already knows of its creator (a session looks it up separately). */
interface Owner {
  readonly email: Option.Option<string>
  readonly role: Option.Option<Role>
}

const anonymous: CallerShape = { user: Option.none(), credential: Option.none(), organization: Option.none() }

export const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const apiKeys = yield* ApiKeys
    const sessions = yield* Sessions
    const accounts = yield* Accounts
    const index = policyIndex(Api)

    const operator = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        if (Option.isNone(config.operatorToken)) return yield* new ResourceNotFound({ detail: "Not found" })
        const given = request.headers["x-svc-operator-token"]
        if (given === undefined || !safeEqual(given, Redacted.value(config.operatorToken.value))) {
          return yield* new Unauthenticated({ detail: "A valid X-Svc-Operator-Token is required" })
        }
        return anonymous
      })

    /** The user and credential behind the request, checked against the route's access code. */
    const authenticate = (request: HttpServerRequest.HttpServerRequest, spec: PolicySpec) =>
      Effect.gen(function*() {
        const authorization = request.headers["authorization"]
        if (authorization !== undefined) {
          const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
          if (match === null) return yield* new InvalidApiKey({ detail: "Expected Authorization: Bearer <API key>" })
          const key = yield* apiKeys.authenticate(match[1]!)
          const access = keyAccess(spec.access, key.preset)
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
            organizationId: key.organization_id
          }
          // The key's lookup brought its creator's address and role in the key's organization along.
          const owner: Owner = {
            email: Option.fromNullable(key.owner_email),
            role: Option.fromNullable(key.owner_role)
          }
          return { userId: key.created_by, credential, owner }
        }
        const token = request.cookies[SESSION_COOKIE]
        if (token === undefined) return yield* new Unauthenticated({ detail: "Sign in or send an API key" })
        const session = yield* sessions.find(token)
        if (Option.isNone(session)) {
          return yield* new Unauthenticated({ detail: "The session has ended; sign in again" })
        }
        if (
          isMutatingMethod(request.method) &&
          !sessions.csrfValid(session.value, request.headers[CSRF_HEADER], request.cookies[CSRF_COOKIE])
        ) {
          return yield* new CsrfInvalid({ detail: `Send the ${CSRF_COOKIE} cookie's value in ${CSRF_HEADER}` })
        }
        const credential: Credential = {
          kind: "session",
          id: session.value.id,
          activeOrganizationId: session.value.active_organization_id,
          authenticatedAt: session.value.authenticated_at
        }
        return { userId: session.value.user_id, credential, owner: undefined }
      })

    /** The organization the route acts on, per api.md's X-Organization-ID rules. */
    const organizationOf = (
      request: HttpServerRequest.HttpServerRequest,
      spec: PolicySpec,
      credential: Credential,
      params: Readonly<Record<string, string | undefined>>
    ) =>
      Effect.gen(function*() {
        const header = request.headers["x-organization-id"]
        if (header !== undefined && !uuidPattern.test(header)) {
          return yield* new InvalidRequest({
            field_errors: [{ field: "X-Organization-ID", message: "must be a UUID" }]
          })
        }
        if (spec.organization === "path") {
          const fromPath = params["organization_id"] ?? ""
          if (credential.kind === "api_key" && credential.organizationId !== fromPath.toLowerCase()) {
            return yield* new ResourceNotFound({ detail: "Organization not found" })
          }
          return fromPath.toLowerCase()
        }
        if (credential.kind === "api_key") {
          if (header !== undefined && header.toLowerCase() !== credential.organizationId) {
            return yield* new OrganizationMismatch({ detail: "X-Organization-ID differs from the key's organization" })
          }
          return credential.organizationId
        }
        const chosen = header?.toLowerCase() ?? credential.activeOrganizationId
        if (chosen === null) {
          return yield* new InvalidRequest({
            field_errors: [{ field: "X-Organization-ID", message: "is required with a browser session" }]
          })
        }
        return chosen
      })

    return Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { params, route } = yield* HttpRouter.RouteContext
      const spec = index.get(`${route.method} ${route.path}`)
      if (spec === undefined) return yield* Effect.dieMessage(`no policy for ${route.method} ${route.path}`)
      if (spec.access === "N") return anonymous
      if (spec.access === "O") return yield* operator(request)
      const { credential, owner, userId } = yield* authenticate(request, spec)
      const email = owner?.email ?? Option.map(yield* accounts.findUser(userId), (user) => user.email)
      if (Option.isNone(email)) return yield* new Unauthenticated({ detail: "The user no longer exists" })
      const caller: CallerShape = {
        user: Option.some({ id: userId, email: email.value }),
        credential: Option.some(credential),
        organization: Option.none()
      }
      if (spec.organization === "none") return caller
      const organizationId = yield* organizationOf(request, spec, credential, params)
      // A key acts only in its own organization (organizationOf), so its owner's role there is the one.
      const role = owner?.role ?? Option.map(yield* accounts.membership(organizationId, userId), (m) => m.role)
      if (Option.isNone(role)) {
        return yield* credential.kind === "api_key"
          ? new Forbidden({ detail: "The key's owner is no longer a member of its organization" })
          : new ResourceNotFound({ detail: "Organization not found" })
      }
      if (!roleAllowed(role.value, spec.roles)) {
        return yield* new Forbidden({ detail: `The role ${role.value} may not do this` })
      }
      return { ...caller, organization: Option.some({ id: organizationId, role: role.value }) }
    })
  })
)
