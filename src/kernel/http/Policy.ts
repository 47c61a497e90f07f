/**
 * Each endpoint declares who may call it as an annotation; one authorization middleware reads it.
 * - `access`: the access code of api.md (R U C F S N) or O for the operator token.
 * - `organization`: where the organization comes from: `header` ([ORG]: X-Organization-ID, fixed by
 *   an API key), `path` (an `organization_id` path parameter), or `none`.
 * - `roles`: the roles allowed in that organization; absent means any member.
 * - `whileSuspended`: whether a suspended organization may call it (see `refusedWhileSuspended`).
 */
import { Context } from "effect"
import { type AccessCode, isMutatingMethod, type Role } from "../domain/Access.js"

export interface PolicySpec {
  readonly access: AccessCode
  readonly organization: "header" | "path" | "none"
  readonly roles?: ReadonlyArray<Role> | undefined
  /** Absent: the rule of `refusedWhileSuspended` decides. */
  readonly whileSuspended?: "allowed" | "refused" | undefined
}

export class Policy extends Context.Tag("svc/api/Policy")<Policy, PolicySpec>() {}

export const policy = (
  access: AccessCode,
  organization: PolicySpec["organization"] = "none",
  roles?: ReadonlyArray<Role>,
  options?: { readonly whileSuspended: "allowed" | "refused" }
): PolicySpec => ({ access, organization, roles, ...options })

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
