/**
 * Who a request came from, behind reverse proxies (`SVC_TRUSTED_PROXIES`). From a peer in the
 * trusted ranges, `X-Forwarded-For` is read from the right: each proxy appends the address it saw,
 * so the rightmost address that is not itself a trusted proxy is the client (anything left of it
 * the client may have written). From any other peer both `X-Forwarded-For` and
 * `X-Forwarded-Proto` are ignored: a client cannot choose its own address for the rate limits,
 * the sign-in guards or the audit log.
 */
import type { HttpServerResponse } from "@effect/platform"
import { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import * as NodeNet from "node:net"
import { cidrMatcher, plainAddress } from "../domain/Cidr.js"

export interface Forwarded {
  /** The client's address: the peer's, or the one trusted proxies name. */
  readonly address: string
  /** Whether a trusted proxy says the client reached it over https. */
  readonly https: boolean
}

const headerText = (value: string | ReadonlyArray<string> | undefined) =>
  value === undefined ? undefined : typeof value === "string" ? value : value.join(",")

/** The client behind `peer` given the request's forwarding headers, with `trusted` the proxies' ranges. */
export const forwardedClient = (
  trusted: (address: string | undefined) => boolean,
  peer: string,
  forwardedFor: string | ReadonlyArray<string> | undefined,
  forwardedProto: string | ReadonlyArray<string> | undefined
): Forwarded => {
  if (!trusted(peer)) return { address: peer, https: false }
  let address = peer
  const hops = (headerText(forwardedFor) ?? "").split(",").map((hop) => plainAddress(hop.trim())).filter((hop) =>
    hop !== ""
  )
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!
    if (NodeNet.isIP(hop) === 0) break
    address = hop
    if (!trusted(hop)) break
  }
  // The proto the nearest proxy wrote is the last one.
  const proto = (headerText(forwardedProto) ?? "").split(",").map((part) => part.trim().toLowerCase()).at(-1)
  return { address, https: proto === "https" }
}

/**
 * The edge's step for trusted proxies: the request's `remoteAddress` becomes the client's. Nothing
 * at all without trusted proxies. (Cookies are Secure by the https base URL, which a TLS proxy's
 * setup has: docs/install.md.)
 */
export const behindProxies = (cidrs: ReadonlyArray<string> | undefined) => {
  if (cidrs === undefined || cidrs.length === 0) return undefined
  const trusted = cidrMatcher(cidrs)
  return <E, R>(
    request: HttpServerRequest.HttpServerRequest,
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
    const peer = Option.getOrUndefined(request.remoteAddress)
    if (peer === undefined || !trusted(peer)) return app
    const client = forwardedClient(trusted, peer, request.headers["x-forwarded-for"], undefined)
    return Effect.provideService(
      app,
      HttpServerRequest.HttpServerRequest,
      request.modify({ remoteAddress: client.address })
    )
  }
}
