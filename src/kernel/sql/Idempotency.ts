/**
 * The one `Idempotency-Key` check of every accepting route (docs/operations.md): the same key with
 * the same request answers what the first request made; with a different request (another body,
 * another route: a machine exec and an agent prompt alike) it answers 409 `idempotency_conflict`.
 * The check runs again inside the accept's transaction, so two concurrent requests make one record.
 */
import { Effect, Option } from "effect"
import { IdempotencyConflict } from "../http/MachineErrors.js"
import { IdempotencyKeysRepo, type KeyAnswer } from "./IdempotencyKeysRepo.js"
import { makeRowLocks } from "./RowLocks.js"

/** Who asks, and with which key. */
export interface Keyed {
  readonly organizationId: string
  /** The `Idempotency-Key` header, quotes removed; none makes every request new. */
  readonly idempotencyKey: string | undefined
}

/** Who asks for a change: the organization, the key, and the user. */
export interface Requester extends Keyed {
  readonly userId: string
  /**
   * Set when svc itself asks (a timer, billing, a suspension, an organization's deletion): the
   * audit log names it as the actor rather than the user whose machine it is.
   */
  readonly system?: string | undefined
}

/** The `Idempotency-Key` header's key: quotes and blanks removed; empty means none. */
export const idempotencyKeyOf = (header: string | undefined) => {
  if (header === undefined) return undefined
  const trimmed = header.trim().replace(/^"(.*)"$/, "$1")
  return trimmed === "" ? undefined : trimmed
}

/** JSON with object keys sorted, so equal requests have equal text. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, item) =>
    item !== null && typeof item === "object" && !Array.isArray(item)
      ? Object.fromEntries(Object.keys(item).sort().map((key) => [key, item[key]]))
      : item)

export const makeIdempotency = Effect.gen(function*() {
  const keys = yield* IdempotencyKeysRepo
  const locks = yield* makeRowLocks
  return {
    /**
     * The record of the earlier request with this key, if any; fails when that request was another.
     * Inside a transaction on PostgreSQL the key stays locked until it ends: a request with the same
     * key on another node waits for this one's commit, then finds its record and replays it.
     */
    previous: (requester: Keyed, fingerprint: string) =>
      Effect.gen(function*() {
        if (requester.idempotencyKey === undefined) return Option.none()
        yield* locks.name(`idempotency ${requester.organizationId} ${requester.idempotencyKey}`)
        const found = yield* keys.find(requester.organizationId, requester.idempotencyKey)
        if (Option.isSome(found) && found.value.fingerprint !== fingerprint) {
          return yield* new IdempotencyConflict({ detail: "This Idempotency-Key was used with a different request" })
        }
        return found
      }),

    /** Records the key with what the request made (inside the accept's transaction). */
    record: (requester: Keyed, fingerprint: string, answer: KeyAnswer, now: number) =>
      requester.idempotencyKey === undefined ? Effect.void : keys.insert({
        organization_id: requester.organizationId,
        idempotency_key: requester.idempotencyKey,
        fingerprint,
        created_at: now
      }, answer)
  }
})
