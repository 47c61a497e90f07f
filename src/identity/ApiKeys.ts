/** API keys: minted for a member of an organization, shown once, stored as a hash. */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { safeEqual } from "../kernel/crypto/Tokens.js"
import { type Preset, presetAtMost, type Role, roleAllowed, Roles } from "../kernel/domain/Access.js"
import * as ApiKeyText from "../kernel/domain/ApiKeyText.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { InsufficientScope, InvalidApiKey, ResourceNotFound } from "../kernel/http/Errors.js"
import { Organizations } from "../organizations/Organizations.js"
import { type ApiKeyRow, ApiKeysRepo } from "./ApiKeysRepo.js"

/** `last_used_at` is written at most this often per key, so reads do not each cost a write. */
const touchIntervalMillis = 60_000

/** A member managing the keys of their organization, through a session or through a key. */
export interface KeyManager {
  readonly organizationId: string
  readonly userId: string
  readonly role: Role
  /** The preset of the key the request came with; undefined with a session. */
  readonly keyPreset: Preset | undefined
}

/** Owners and admins manage every key of the organization; other members only their own. */
const seesAll = (manager: KeyManager) => roleAllowed(manager.role, Roles.administrators)

const visibleTo = (manager: KeyManager, row: ApiKeyRow) => seesAll(manager) || row.created_by === manager.userId

export interface MintRequest {
  readonly organizationId: string
  readonly userId: string
  readonly name: string
  readonly preset: Preset
  readonly expiresInDays: number
}

const make = Effect.gen(function*() {
  const repo = yield* ApiKeysRepo
  const organizations = yield* Organizations

  const mint = (request: MintRequest) =>
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
    })

  return {
    mint,
    /** A new key of the manager's: a key may only create keys whose preset is not above its own. */
    create: (manager: KeyManager, request: Pick<MintRequest, "name" | "preset" | "expiresInDays">) =>
      Effect.gen(function*() {
        if (manager.keyPreset !== undefined && !presetAtMost(request.preset, manager.keyPreset)) {
          return yield* new InsufficientScope({
            detail: "A key may only create keys whose preset is not above its own"
          })
        }
        return yield* mint({ ...request, organizationId: manager.organizationId, userId: manager.userId })
      }),
    /** The organization's keys the manager may see. */
    list: (manager: KeyManager) =>
      Effect.map(
        repo.listByOrganization(manager.organizationId),
        (rows) => rows.filter((row) => visibleTo(manager, row))
      ),
    /** Revokes a key the manager may see; any other is not found. */
    revoke: (manager: KeyManager, id: string) =>
      Effect.gen(function*() {
        const row = yield* repo.findById(manager.organizationId, id)
        if (Option.isNone(row) || !visibleTo(manager, row.value)) {
          return yield* new ResourceNotFound({ detail: "API key not found" })
        }
        yield* repo.revoke(row.value.id, yield* Clock.currentTimeMillis)
      }),
    /**
     * Ends the keys held in the organization: one member's (they were removed) or everyone's (it was
     * deleted). Answers how many live keys were revoked.
     */
    revokeHeldBy: (organizationId: string, userId: string | null) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => repo.revokeHeldBy(organizationId, userId, now)),
    /**
     * The live key this text names (malformed, unknown, expired and revoked keys are all invalid),
     * with its creator's role in the key's organization (null once they left it).
     */
    authenticate: (text: string) =>
      Effect.gen(function*() {
        const invalid = (detail: string) => new InvalidApiKey({ detail })
        const keyId = ApiKeyText.parse(text)
        if (keyId === undefined) return yield* invalid("The API key is malformed")
        const row = yield* repo.findByKeyId(keyId)
        if (Option.isNone(row) || !safeEqual(row.value.secret_hash, ApiKeyText.hash(text))) {
          return yield* invalid("The API key is not known")
        }
        const now = yield* Clock.currentTimeMillis
        if (row.value.revoked_at !== null) return yield* invalid("The API key was revoked")
        if (row.value.expires_at <= now) return yield* invalid("The API key has expired")
        if (row.value.last_used_at === null || row.value.last_used_at <= now - touchIntervalMillis) {
          yield* repo.touch(row.value.id, now)
        }
        const membership = yield* organizations.membership(row.value.organization_id, row.value.created_by)
        return { ...row.value, owner_role: Option.isSome(membership) ? membership.value.role : null }
      })
  }
})

export class ApiKeys extends Context.Tag("svc/identity/ApiKeys")<ApiKeys, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(ApiKeys, make)
}
