/**
 * Port tokens (extensions.md §5): a member shares one private port of one machine for a while
 * without sharing a key. The token is random and shown once; only its SHA-256 is stored, with the
 * machine, the port and the expiry, so a token opens exactly that port until it expires.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { randomToken, sha256 } from "../kernel/crypto/Tokens.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { findPort, parsePorts, portUrl } from "../kernel/domain/Ports.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { EngineReads } from "../runtime/EngineReads.js"
import { PortTokensRepo } from "./Repo.js"

/** Where a request carries a port token: a header, a query parameter (GET: moved into the cookie), a cookie. */
export const PORT_TOKEN_HEADER = "x-svc-port-token"
export const PORT_TOKEN_PARAM = "svc_port_token"
/** The cookie a query token is moved into; its path is the port's, so each port has its own. */
export const PORT_TOKEN_COOKIE = "svc_port_token"

export interface NewPortToken {
  readonly token: string
  readonly url: string
  readonly expiresAt: number
}

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const { machines } = yield* EngineReads
  const repo = yield* PortTokensRepo
  return {
    /** A token for an exposed port of the organization's live machine; 404 for anything else. */
    create: (
      requester: { readonly organizationId: string; readonly userId: string },
      machineId: string,
      port: number,
      expiresInSeconds: number
    ) =>
      Effect.gen(function*() {
        const found = yield* machines.findIn(requester.organizationId, machineId)
        if (Option.isNone(found) || found.value.state === "deleted") {
          return yield* new ResourceNotFound({ detail: "Machine not found" })
        }
        if (findPort(parsePorts(found.value.ports), port) === undefined) {
          return yield* new ResourceNotFound({ detail: `Port ${port} is not exposed` })
        }
        const now = yield* Clock.currentTimeMillis
        const token = randomToken()
        const expiresAt = now + expiresInSeconds * 1000
        yield* repo.insert({
          id: uuidv7(now),
          token_hash: sha256(token),
          machine_id: machineId,
          port,
          created_by: requester.userId,
          created_at: now,
          expires_at: expiresAt
        })
        return { token, url: portUrl(config, machineId, port), expiresAt } satisfies NewPortToken
      }),

    /** Whether `token` opens `port` of `machineId` now. */
    opens: (token: string, machineId: string, port: number) =>
      Effect.gen(function*() {
        const found = yield* repo.findByTokenHash(sha256(token))
        if (Option.isNone(found)) return false
        const now = yield* Clock.currentTimeMillis
        return found.value.machine_id === machineId && found.value.port === port && now < found.value.expires_at
      })
  }
})

export class PortTokens extends Context.Tag("svc/ports/PortTokens")<PortTokens, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(PortTokens, make)
}
