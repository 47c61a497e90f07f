/**
 * Who may open a machine's port through the proxy (extensions.md §5). A public port needs nothing; a
 * private one an API key of the machine's organization (any preset: they all have R), a member's
 * session (changes and upgrades only from svc's own site: a cross-site page must not act as the
 * member through their cookie), or a port token for that machine and port. Anything else, an
 * unknown or deleted machine, or a port that is not exposed is the same answer, so the proxy does
 * not tell which machines exist.
 */
import { Context, Effect, Either, Layer, Option } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { findPort, parsePorts } from "../kernel/domain/Ports.js"
import {
  Authenticate,
  type AuthenticationError,
  type RequestFacts,
  type Requirement
} from "../kernel/http/Authenticate.js"
import { CsrfInvalid } from "../kernel/http/Errors.js"
import { EngineReads } from "../runtime/EngineReads.js"
import { PORT_TOKEN_COOKIE, PORT_TOKEN_HEADER, PortTokens } from "./PortTokens.js"

export type PortAccess =
  | { readonly _tag: "NotFound" }
  /** `query_token`: a token in the URL, which the proxy moves into a cookie. */
  | { readonly _tag: "Open"; readonly via: "public" | "member" | "token" | "query_token" }

const notFound: PortAccess = { _tag: "NotFound" }
const open = (via: Extract<PortAccess, { _tag: "Open" }>["via"]): PortAccess => ({ _tag: "Open", via })

export interface PortTarget {
  readonly machineId: string
  readonly port: number
  /** The `svc_port_token` query parameter, if any. */
  readonly queryToken: string | null
}

const make = Effect.gen(function*() {
  const { machines } = yield* EngineReads
  const { authenticate } = yield* Authenticate
  const portTokens = yield* PortTokens

  const opens = (token: string | null | undefined, target: PortTarget) =>
    token === null || token === undefined
      ? Effect.succeed(false)
      : portTokens.opens(token, target.machineId, target.port)

  /** "open", "refused" (a member's session from another site) or "none" (no credential of svc opens it). */
  const asMember = (request: RequestFacts, organizationId: string) =>
    Effect.gen(function*() {
      const requirement: Requirement = {
        access: "R",
        organization: { resource: organizationId },
        // api.md: a private port opens to a key of any preset or a session of any member.
        roles: Roles.anyMember,
        sessionGuard: "same_site"
      }
      const verdict = (result: Either.Either<unknown, AuthenticationError>) =>
        Either.isRight(result) ? "open" : result.left instanceof CsrfInvalid ? "refused" : "none"
      const first = verdict(yield* Effect.either(authenticate(request, requirement)))
      if (first !== "none" || request.headers.authorization === undefined) return first
      // Each credential is tried on its own: a key that does not open the port leaves the session its turn.
      const withoutKey: RequestFacts = {
        method: request.method,
        headers: { ...request.headers, authorization: undefined },
        cookies: request.cookies,
        upgrading: request.upgrading
      }
      return verdict(yield* Effect.either(authenticate(withoutKey, requirement)))
    })

  return {
    access: (request: RequestFacts, target: PortTarget) =>
      Effect.gen(function*() {
        const machine = yield* machines.find(target.machineId)
        if (Option.isNone(machine) || machine.value.state === "deleted") return notFound
        const exposed = findPort(parsePorts(machine.value.ports), target.port)
        if (exposed === undefined) return notFound
        if (exposed.public) return open("public")
        const member = yield* asMember(request, machine.value.organization_id)
        if (member === "open") return open("member")
        if (member === "refused") return notFound
        const header = request.headers[PORT_TOKEN_HEADER]
        if (yield* opens(typeof header === "string" ? header : undefined, target)) return open("token")
        if (yield* opens(target.queryToken, target)) return open("query_token")
        if (yield* opens(request.cookies[PORT_TOKEN_COOKIE], target)) return open("token")
        return notFound
      })
  }
})

export class Ports extends Context.Tag("svc/ports/Ports")<Ports, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Ports, make)
}
