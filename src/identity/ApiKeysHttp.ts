import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { presetAtMost, roleAllowed, Roles } from "../kernel/domain/Access.js"
import { currentCredential, currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { InsufficientScope, ResourceNotFound } from "../kernel/http/Errors.js"
import { ApiKeys, toDto } from "./ApiKeys.js"

/** Owners and admins manage every key of the organization; other members only their own. */
const seesAll = (role: Parameters<typeof roleAllowed>[0]) => roleAllowed(role, Roles.administrators)

export const ApiKeysHandlers = HttpApiBuilder.group(Api, "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    return handlers
      .handle("list", () =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          const user = yield* currentUser
          const rows = yield* apiKeys.list(organization.id)
          const visible = seesAll(organization.role) ? rows : rows.filter((row) => row.created_by === user.id)
          return { items: visible.map(toDto) }
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          const user = yield* currentUser
          const credential = yield* currentCredential
          if (credential.kind === "api_key" && !presetAtMost(payload.preset, credential.preset)) {
            return yield* new InsufficientScope({
              detail: "A key may only create keys whose preset is not above its own"
            })
          }
          const { row, secret } = yield* apiKeys.mint({
            organizationId: organization.id,
            userId: user.id,
            name: payload.name,
            preset: payload.preset,
            expiresInDays: payload.expires_in_days
          })
          return { api_key: toDto(row), secret }
        }))
      .handle("revoke", ({ path }) =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          const user = yield* currentUser
          const row = yield* apiKeys.find(organization.id, path.id)
          if (Option.isNone(row) || (!seesAll(organization.role) && row.value.created_by !== user.id)) {
            return yield* new ResourceNotFound({ detail: "API key not found" })
          }
          yield* apiKeys.revoke(row.value.id)
        }))
  }))
