/**
 * The middleware every group uses: it authenticates the caller, applies the endpoint's Policy and
 * provides the Caller. Its failures are the 401 and 403 answers of api.md.
 */
import { HttpApiMiddleware } from "@effect/platform"
import { Context, Option, Schema } from "effect"
import type { Preset, Role } from "../domain/Access.js"
import {
  CsrfInvalid,
  Forbidden,
  InsufficientScope,
  InvalidApiKey,
  InvalidRequest,
  OrganizationMismatch,
  OrganizationSuspended,
  RateLimited,
  ResourceNotFound,
  SessionRequired,
  Unauthenticated,
  UnsupportedMediaType
} from "./Errors.js"
import { wire } from "./Problem.js"

export type Credential =
  | { readonly kind: "api_key"; readonly id: string; readonly preset: Preset; readonly organizationId: string }
  | {
    readonly kind: "session"
    readonly id: string
    readonly activeOrganizationId: string | null
    readonly authenticatedAt: number
  }

export interface CallerShape {
  /** The signed-in user, or the key's owner; none on routes of access N without a session. */
  readonly user: Option.Option<{ readonly id: string; readonly email: string }>
  readonly credential: Option.Option<Credential>
  /** The organization of an [ORG] or organization path route, with the caller's role in it. */
  readonly organization: Option.Option<{ readonly id: string; readonly role: Role }>
}

export class Caller extends Context.Tag("svc/api/Caller")<Caller, CallerShape>() {}

export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("svc/api/Authorization", {
  provides: Caller,
  failure: Schema.Union(
    wire(Unauthenticated),
    wire(InvalidApiKey),
    wire(Forbidden),
    wire(InsufficientScope),
    wire(CsrfInvalid),
    wire(OrganizationMismatch),
    wire(OrganizationSuspended),
    wire(SessionRequired),
    wire(ResourceNotFound),
    wire(InvalidRequest),
    wire(RateLimited),
    wire(UnsupportedMediaType)
  )
}) {}
