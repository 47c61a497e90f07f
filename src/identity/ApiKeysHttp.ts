import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import * as ApiKeyText from "../kernel/domain/ApiKeyText.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentCredential, currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import type { ApiKeyDto } from "./Api.js"
import { ApiKeys, type KeyManager } from "./ApiKeys.js"
import type { ApiKeyRow } from "./ApiKeysRepo.js"

export const toDto = (row: ApiKeyRow): ApiKeyDto => ({
  id: row.id,
  organization_id: row.organization_id,
  created_by: row.created_by,
  name: row.name,
  prefix: ApiKeyText.prefixOf(row.key_id),
  last_four: row.last_four,
  preset: row.preset,
  created_at: iso(row.created_at),
  expires_at: iso(row.expires_at),
  last_used_at: isoOrNull(row.last_used_at),
  revoked_at: isoOrNull(row.revoked_at)
})

/** The caller as the keys' rules see them: their organization, role and (for a key) its preset. */
const keyManager = Effect.gen(function*() {
  const organization = yield* currentOrganization
  const credential = yield* currentCredential
  const manager: KeyManager = {
    organizationId: organization.id,
    userId: (yield* currentUser).id,
    role: organization.role,
    keyPreset: credential.kind === "api_key" ? credential.preset : undefined
  }
  return manager
})

export const ApiKeysHandlers = HttpApiBuilder.group(Api, "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    return handlers
      .handle("list", () =>
        Effect.gen(function*() {
          const rows = yield* apiKeys.list(yield* keyManager)
          return { items: rows.map(toDto) }
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const { row, secret } = yield* apiKeys.create(yield* keyManager, {
            name: payload.name,
            preset: payload.preset,
            expiresInDays: payload.expires_in_days
          })
          return { api_key: toDto(row), secret }
        }))
      .handle("revoke", ({ path }) => Effect.flatMap(keyManager, (manager) => apiKeys.revoke(manager, path.id)))
  })).pipe(buildWithOnly(Authorization, ApiKeys))
