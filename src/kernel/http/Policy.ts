/**
 * Each endpoint declares who may call it as an annotation; one authorization middleware reads it.
 * - `access`: the access code of api.md (R U C F S N) or O for the operator token.
 * - `organization`: where the organization comes from: `header` ([ORG]: X-Organization-ID, fixed by
 *   an API key), `path` (an `organization_id` path parameter), or `none`.
 * - `roles`: the roles allowed in that organization; absent means any member.
 */
import { Context } from "effect"
import type { AccessCode, Role } from "../domain/Access.js"

export interface PolicySpec {
  readonly access: AccessCode
  readonly organization: "header" | "path" | "none"
  readonly roles?: ReadonlyArray<Role> | undefined
}

export class Policy extends Context.Tag("svc/api/Policy")<Policy, PolicySpec>() {}

export const policy = (
  access: AccessCode,
  organization: PolicySpec["organization"] = "none",
  roles?: ReadonlyArray<Role>
): PolicySpec => ({ access, organization, roles })
