import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { acceptedChange, iso } from "../kernel/http/Dto.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { Environments } from "./Environments.js"
import type { EnvironmentRow } from "./Repo.js"

/** Values are write-only: the answer names the variables, never their values. */
const environmentDto = (row: EnvironmentRow) => ({
  id: row.id,
  organization_id: row.organization_id,
  name: row.name,
  version: row.version,
  variable_names: JSON.parse(row.variable_names) as Array<string>,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

export const EnvironmentsHandlers = HttpApiBuilder.group(Api, "environments", (handlers) =>
  Effect.gen(function*() {
    const environments = yield* Environments
    const accepted = acceptedChange((yield* AppConfig).baseUrl)
    const organizationId = Effect.map(currentOrganization, (organization) => organization.id)
    return handlers
      .handle("list", () =>
        Effect.map(
          Effect.flatMap(organizationId, environments.list),
          (rows) => ({ items: rows.map(environmentDto) })
        ))
      .handle("create", ({ payload }) =>
        Effect.map(
          Effect.flatMap(organizationId, (org) => environments.create(org, payload)),
          environmentDto
        ))
      .handle("get", ({ path }) =>
        Effect.map(
          Effect.flatMap(organizationId, (org) => environments.find(org, path.id.toLowerCase())),
          environmentDto
        ))
      .handle("update", ({ path, payload }) =>
        Effect.map(
          Effect.flatMap(organizationId, (org) => environments.patch(org, path.id.toLowerCase(), payload)),
          environmentDto
        ))
      .handle("delete", ({ path }) =>
        Effect.flatMap(organizationId, (org) => environments.remove(org, path.id.toLowerCase())))
      .handle("upgrade", ({ path }) =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          const user = yield* currentUser
          const upgraded = yield* environments.upgrade(
            { organizationId: organization.id, userId: user.id },
            path.id.toLowerCase()
          )
          return { operations: upgraded.operations.map(accepted) }
        }))
  })).pipe(buildWithOnly(Authorization, AppConfig, Environments))
