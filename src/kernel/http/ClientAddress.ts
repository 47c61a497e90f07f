/**
 * Who a request came from, behind reverse proxies (`SVC_TRUSTED_PROXIES`). From a peer in the
 * trusted ranges, `X-Forwarded-For` is read from the right: each proxy appends the address it saw,
 * so the rightmost address that is not itself a trusted proxy is the client (anything left of it
 * the client may have written). From any other peer both `X-Forwarded-For` and
 * `X-Forwarded-Proto` are ignored: a client cannot choose its own address for the rate limits,
 * the sign-in guards or the audit log.
 */
import { Cookies, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef, Option } from "effect"
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

/** Whether a trusted proxy says this request reached it over https (false without trusted proxies). */
export const ForwardedHttps = FiberRef.unsafeMake(false)

/** Every cookie of the response with `Secure`. */
const secureCookies = HttpServerResponse.updateCookies((cookies) =>
  Object.values(cookies.cookies).reduce(
    (all, cookie) => Cookies.unsafeSet(all, cookie.name, cookie.value, { ...cookie.options, secure: true }),
    Cookies.empty
  )
)

/**
 * The response as the client gets it: its cookies Secure when a trusted proxy says the request came
 * over https. A pre-response handler must apply it: the server writes the answer before the edge's
 * middleware sees it (HttpApp.toHandled), so changing the response there has no effect.
 */
export const secureWhenForwardedHttps = (response: HttpServerResponse.HttpServerResponse) =>
  Effect.map(FiberRef.get(ForwardedHttps), (https) => https ? secureCookies(response) : response)

/**
 * The edge's step for trusted proxies: the request's `remoteAddress` becomes the client's, and
 * over https (by `X-Forwarded-Proto`) every cookie it sets is Secure, whatever SVC_BASE_URL's
 * scheme (Cookies.ts applies the same to the cookies it adds later). Nothing at all without
 * trusted proxies.
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
    const client = forwardedClient(
      trusted,
      peer,
      request.headers["x-forwarded-for"],
      request.headers["x-forwarded-proto"]
    )
    const served = Effect.provideService(
      app,
      HttpServerRequest.HttpServerRequest,
      request.modify({ remoteAddress: client.address })
    )
    return client.https
      ? Effect.zipRight(
        HttpApp.appendPreResponseHandler((_request, response) => secureWhenForwardedHttps(response)),
        Effect.locally(served, ForwardedHttps, true)
      )
      : served
  }
}
