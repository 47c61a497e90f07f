/** API keys: minted for a member of an organization, shown once, stored as a hash. */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { Preset } from "../kernel/domain/Access.js"
import * as ApiKeyText from "../kernel/domain/ApiKeyText.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import { InvalidApiKey } from "../kernel/http/Errors.js"
import type { ApiKeyDto } from "./ApiKeysApi.js"
import { type ApiKeyRow, ApiKeysRepo } from "./ApiKeysRepo.js"

/** `last_used_at` is written at most this often per key, so reads do not each cost a write. */
const touchIntervalMillis = 60_000

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

export interface MintRequest {
  readonly organizationId: string
  readonly userId: string
  readonly name: string
  readonly preset: Preset
  readonly expiresInDays: number
}

const make = Effect.gen(function*() {
  const repo = yield* ApiKeysRepo
  return {
    mint: (request: MintRequest) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const key = ApiKeyText.generate()
        const row: ApiKeyRow = {
          id: uuidv7(),
          key_id: key.keyId,
          secret_hash: ApiKeyText.hash(key.text),
          organization_id: request.organizationId,
          created_by: request.userId,
          name: request.name,
          preset: request.preset,
          last_four: ApiKeyText.lastFourOf(key.text),
          created_at: now,
          expires_at: now + request.expiresInDays * 24 * 3600_000,
          last_used_at: null,
          revoked_at: null
        }
        yield* repo.insert(row)
        return { row, secret: key.text }
      }),
    /** The live key this text names: malformed, unknown, expired and revoked keys are all invalid. */
    authenticate: (text: string) =>
      Effect.gen(function*() {
        const invalid = (detail: string) => new InvalidApiKey({ detail })
        const keyId = ApiKeyText.parse(text)
        if (keyId === undefined) return yield* invalid("The API key is malformed")
        const row = yield* repo.findByKeyId(keyId)
        if (Option.isNone(row) || row.value.secret_hash !== ApiKeyText.hash(text)) {
          return yield* invalid("The API key is not known")
        }
        const now = yield* Clock.currentTimeMillis
        if (row.value.revoked_at !== null) return yield* invalid("The API key was revoked")
        if (row.value.expires_at <= now) return yield* invalid("The API key has expired")
        if (row.value.last_used_at === null || row.value.last_used_at <= now - touchIntervalMillis) {
          yield* repo.touch(row.value.id, now)
        }
        return row.value
      }),
    list: repo.listByOrganization,
    find: repo.findById,
    revoke: (id: string) => Effect.flatMap(Clock.currentTimeMillis, (now) => repo.revoke(id, now))
  }
})

export class ApiKeys extends Context.Tag("svc/services/ApiKeys")<ApiKeys, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(ApiKeys, make)
}
