/**
 * The device authorization grant (RFC 8628): a device asks for a code pair, shows the user code, and
 * polls; a signed-in user approves it (organization, preset, name, lifetime) or denies it. The key
 * is minted when the device next polls, for the approving user (so it acts with that user's current
 * role), and answered exactly once. Device and user codes are stored as hashes; a poll sooner than
 * the interval answers `slow_down` and adds 5 s to it (extensions.md §17).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import * as NodeCrypto from "node:crypto"
import { AuditLog } from "../kernel/AuditLog.js"
import { randomToken, sha256 } from "../kernel/crypto/Tokens.js"
import type { Preset } from "../kernel/domain/Access.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { RateLimiter } from "../kernel/http/RateLimiter.js"
import { Organizations } from "../organizations/Organizations.js"
import { ApiKeys } from "./ApiKeys.js"
import { type DeviceAuthorizationRow, DeviceAuthorizationsRepo } from "./DeviceAuthorizationsRepo.js"

export const DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
export const deviceCodeLifetimeSeconds = 600
export const pollIntervalSeconds = 5
export const slowDownSeconds = 5
export const defaultClientName = "svc CLI"
export const defaultKeyLifetimeDays = 90

const window = 10 * 60_000
export const limits = {
  codesPerClient: { limit: 20, windowMillis: window },
  /** Looking up, approving and denying user codes, per signed-in user: guessing codes stays slow. */
  decisionsPerUser: { limit: 30, windowMillis: window }
}

/** The user code as typed: case, spaces and dashes ignored; undefined when it cannot be one. */
export const normalizeUserCode = (text: string) => {
  const code = text.toUpperCase().replace(/[\s-]/g, "")
  return code.length === 8 && [...code].every((c) => USER_CODE_ALPHABET.includes(c)) ? code : undefined
}

export const formatUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`

const randomUserCode = () =>
  Array.from({ length: 8 }, () => USER_CODE_ALPHABET[NodeCrypto.randomInt(USER_CODE_ALPHABET.length)]).join("")

/** The default key name: the client's name and "(device)", within the 64 characters of a key name. */
export const defaultKeyName = (clientName: string) => `${clientName.slice(0, 55)} (device)`

export type DeviceTokenErrorCode =
  | "authorization_pending"
  | "slow_down"
  | "access_denied"
  | "expired_token"
  | "invalid_grant"
  | "invalid_request"
  | "unsupported_grant_type"

/** A token poll's answer other than the key, in RFC 8628's shape. */
export class DeviceTokenFailure extends Data.TaggedError("DeviceTokenFailure")<{
  readonly error: DeviceTokenErrorCode
  readonly description: string
}> {}

const tokenFailure = (error: DeviceTokenErrorCode, description: string) =>
  Effect.fail(new DeviceTokenFailure({ error, description }))

export interface Approval {
  readonly userCode: string
  readonly expiresInDays: number | null | undefined
  readonly name: string | null | undefined
  readonly preset: Preset | null | undefined
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const repo = yield* DeviceAuthorizationsRepo
  const apiKeys = yield* ApiKeys
  const organizations = yield* Organizations
  const audit = yield* AuditLog
  const rateLimiter = yield* RateLimiter

  const notFound = new ResourceNotFound({ detail: "Unknown, expired or already decided code" })

  /** The pending, unexpired request of a typed user code, or 404. */
  const pendingByUserCode = (userId: string, text: string) =>
    Effect.gen(function*() {
      yield* rateLimiter.consume(`device-decisions:user:${userId}`, limits.decisionsPerUser)
      const code = normalizeUserCode(text)
      if (code === undefined) return yield* notFound
      const row = yield* repo.byUserCode(sha256(code))
      const now = yield* Clock.currentTimeMillis
      if (Option.isNone(row) || row.value.status !== "pending" || row.value.expires_at <= now) return yield* notFound
      return { row: row.value, code, now }
    })

  /** Mints the approved key for the approver, once; refuses when they are no longer a member. */
  const issue = (row: DeviceAuthorizationRow) =>
    Effect.gen(function*() {
      const organizationId = row.organization_id!
      const approver = row.decided_by!
      if (Option.isNone(yield* organizations.membership(organizationId, approver))) {
        yield* repo.revokeApproval(row.id)
        return yield* tokenFailure("access_denied", "The approving user is no longer a member of the organization")
      }
      const key = yield* apiKeys.mint({
        organizationId,
        userId: approver,
        name: row.key_name!,
        preset: row.preset!,
        expiresInDays: row.key_expires_in_days!
      })
      // Polls run one transaction at a time, so the status read above still holds; were it not so,
      // dying rolls the minted key back with the transaction.
      if (!(yield* repo.issue(row.id, key.row.id))) return yield* Effect.dieMessage("device key issued twice")
      return { key, expiresInSeconds: row.key_expires_in_days! * 24 * 3600 }
    })

  return {
    /** A new code pair for a device. */
    request: (clientName: string | null | undefined, scope: Preset | null | undefined, client: string) =>
      Effect.gen(function*() {
        yield* rateLimiter.consume(`device-codes:client:${client}`, limits.codesPerClient)
        const now = yield* Clock.currentTimeMillis
        const deviceCode = randomToken()
        for (let attempt = 0;; attempt++) {
          const userCode = randomUserCode()
          const inserted = yield* repo.insert({
            id: uuidv7(),
            device_code_hash: sha256(deviceCode),
            user_code_hash: sha256(userCode),
            client_name: clientName ?? defaultClientName,
            requested_scope: scope ?? "create_and_use",
            status: "pending",
            interval_seconds: pollIntervalSeconds,
            last_polled_at: null,
            created_at: now,
            expires_at: now + deviceCodeLifetimeSeconds * 1000,
            decided_by: null,
            decided_at: null,
            organization_id: null,
            preset: null,
            key_name: null,
            key_expires_in_days: null,
            api_key_id: null
          })
          if (inserted) {
            return {
              deviceCode,
              userCode: formatUserCode(userCode),
              expiresIn: deviceCodeLifetimeSeconds,
              interval: pollIntervalSeconds
            }
          }
          if (attempt >= 5) return yield* Effect.dieMessage("no free user code after 6 draws")
        }
      }),
    /** A device's poll: the key once approved, else the RFC's error for where the request stands. */
    poll: (deviceCode: unknown, grantType: unknown) =>
      Effect.gen(function*() {
        if (typeof grantType !== "string" || typeof deviceCode !== "string" || deviceCode === "") {
          return yield* tokenFailure("invalid_request", "device_code and grant_type are required strings")
        }
        if (grantType !== DEVICE_GRANT_TYPE) {
          return yield* tokenFailure("unsupported_grant_type", `grant_type must be ${DEVICE_GRANT_TYPE}`)
        }
        const found = yield* repo.byDeviceCode(sha256(deviceCode))
        if (Option.isNone(found)) return yield* tokenFailure("invalid_grant", "Unknown device code")
        const row = found.value
        if (row.status === "issued") return yield* tokenFailure("invalid_grant", "The key was already issued")
        const now = yield* Clock.currentTimeMillis
        if (row.expires_at <= now) return yield* tokenFailure("expired_token", "The device code has expired")
        if (row.last_polled_at !== null && now - row.last_polled_at < row.interval_seconds * 1000) {
          const interval = row.interval_seconds + slowDownSeconds
          yield* repo.polled(row.id, now, interval)
          return yield* tokenFailure("slow_down", `Poll at most every ${interval} seconds`)
        }
        yield* repo.polled(row.id, now, row.interval_seconds)
        if (row.status === "pending") return yield* tokenFailure("authorization_pending", "Not yet approved")
        if (row.status === "denied") return yield* tokenFailure("access_denied", "The request was denied")
        return yield* issue(row)
      }).pipe(
        // The poll's bookkeeping commits whatever it answers: a failure must not roll it back.
        Effect.either,
        sql.withTransaction,
        Effect.catchTag("SqlError", Effect.die),
        Effect.flatten
      ),
    /** What a signed-in user is asked to approve. */
    describe: (userId: string, userCode: string) =>
      Effect.map(pendingByUserCode(userId, userCode), ({ code, row }) => ({ row, userCode: formatUserCode(code) })),
    /** Approves for `organizationId` (the caller is a member: the route checked it). */
    approve: (userId: string, organizationId: string, approval: Approval) =>
      Effect.gen(function*() {
        const { code, now, row } = yield* pendingByUserCode(userId, approval.userCode)
        const preset = approval.preset ?? row.requested_scope
        const expiresInDays = approval.expiresInDays ?? defaultKeyLifetimeDays
        const decided = yield* repo.decide(row.id, now, {
          status: "approved",
          decidedBy: userId,
          decidedAt: now,
          organizationId,
          preset,
          keyName: approval.name ?? defaultKeyName(row.client_name),
          keyExpiresInDays: expiresInDays
        })
        if (!decided) return yield* notFound
        return { userCode: formatUserCode(code), organizationId, preset, expiresInDays }
      }),
    /** Denies, recording `device.deny` in the organization's audit log in the same transaction. */
    deny: (userId: string, organizationId: string, userCode: string) =>
      Effect.gen(function*() {
        const { now, row } = yield* pendingByUserCode(userId, userCode)
        yield* Effect.gen(function*() {
          const decided = yield* repo.decide(row.id, now, {
            status: "denied",
            decidedBy: userId,
            decidedAt: now,
            organizationId,
            preset: null,
            keyName: null,
            keyExpiresInDays: null
          })
          if (!decided) return yield* notFound
          yield* audit.record({
            actor: userId,
            actorKind: "user",
            action: "device.deny",
            organizationId,
            reason: null,
            detail: { device_authorization_id: row.id, client_name: row.client_name }
          })
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
      })
  }
})

export class DeviceGrant extends Context.Tag("svc/identity/DeviceGrant")<
  DeviceGrant,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(DeviceGrant, make)
}
