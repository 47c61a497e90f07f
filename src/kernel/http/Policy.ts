/**
 * Each endpoint declares who may call it as an annotation; one authorization middleware reads it.
 * - `access`: the access code of api.md (R U C F S N) or O for the operator token.
 * - `organization`: where the organization comes from: `header` ([ORG]: X-Organization-ID, fixed by
 *   an API key), `path` (an `organization_id` path parameter), or `none`.
 * - `roles`: the roles allowed in that organization, required on every organization-scoped route
 *   (`Roles.anyMember` says "every member" out loud), checked against the caller's role at the
 *   moment of the request, for sessions and API keys alike.
 * - `whileSuspended`: whether a suspended organization may call it (see `refusedWhileSuspended`).
 */
import { Context } from "effect"
import { type AccessCode, isMutatingMethod, type Role } from "../domain/Access.js"

interface PolicyBase {
  readonly access: AccessCode
  /** Absent: the rule of `refusedWhileSuspended` decides. */
  readonly whileSuspended?: "allowed" | "refused" | undefined
}

export type PolicySpec =
  | PolicyBase & { readonly organization: "none"; readonly roles?: undefined }
  | PolicyBase & { readonly organization: "header" | "path"; readonly roles: ReadonlyArray<Role> }

export class Policy extends Context.Tag("svc/api/Policy")<Policy, PolicySpec>() {}

/**
 * `policy("R")`: a route outside any organization; `policy("U", "header", Roles.machineChangers)`:
 * an organization-scoped route and the roles it allows (one declaration: no handler checks a role).
 */
export function policy(access: AccessCode): PolicySpec
export function policy(
  access: AccessCode,
  organization: "header" | "path",
  roles: ReadonlyArray<Role>,
  options?: { readonly whileSuspended: "allowed" | "refused" }
): PolicySpec
export function policy(
  access: AccessCode,
  organization?: "header" | "path",
  roles?: ReadonlyArray<Role>,
  options?: { readonly whileSuspended: "allowed" | "refused" }
): PolicySpec {
  if (organization === undefined) return { access, organization: "none" }
  if (roles === undefined || roles.length === 0) {
    throw new Error(`an organization-scoped policy (${access}, ${organization}) must name its roles`)
  }
  return { access, organization, roles, ...options }
}

/**
 * Whether a suspended organization is refused this route (`403 organization_suspended`): by default
 * every change of an organization that an API key needs `use_existing` or `create_and_use` for
 * (access U or C: the routes that run or make machines, commands, files, terminals, agent turns),
 * so a route added later is covered without a word. Routes that only stop, delete, rename or
 * cancel say `whileSuspended: "allowed"`; reads and administration (F, S) are never refused.
 */
export const refusedWhileSuspended = (method: string, spec: PolicySpec) =>
  spec.whileSuspended === undefined
    ? isMutatingMethod(method) && spec.organization !== "none" && (spec.access === "U" || spec.access === "C")
    : spec.whileSuspended === "refused"

/** The marking of a route that a suspended organization keeps (it only stops, deletes or renames). */
export const allowedWhileSuspended = (spec: PolicySpec): PolicySpec => ({ ...spec, whileSuspended: "allowed" })
