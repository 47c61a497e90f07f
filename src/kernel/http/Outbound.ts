/**
 * Outbound HTTP to URLs that users give (webhook endpoints): the one module through which svc sends
 * any such request (extensions.md §12). A URL is checked when it is saved (`checkUrl`) and the
 * address is checked again when the connection is made: the agent's own `lookup` resolves the name,
 * refuses a non-public address and hands the socket exactly the address it checked, so a name that
 * resolves to a public address at save time and to 127.0.0.1 later (DNS rebinding) is refused, and
 * no second resolution can differ from the checked one.
 *
 * Refused: any scheme but https, any port but 443, credentials, fragments, and every address that
 * is not public unicast (loopback, private, link-local with the cloud metadata address, CGNAT,
 * multicast, reserved and documentation ranges, and IPv6 forms that embed an IPv4 address: mapped,
 * compatible, NAT64, 6to4, Teredo). IPv4 in decimal, hex or octal forms is normalised by the WHATWG
 * URL parser before the check. Redirects are never followed (a 3xx is an answer like any other),
 * each request waits at most 10 s, and at most 1 KiB of the answer's body is read.
 * `SVC_WEBHOOK_ALLOW_PRIVATE=true` allows http, any port and any address (homelabs, tests).
 * Certificates are verified against Node's CAs and those of `SVC_EXTRA_CA_CERTS`.
 */
import { Context, Data, Effect, Layer } from "effect"
import * as NodeDns from "node:dns"
import * as NodeHttp from "node:http"
import * as NodeHttps from "node:https"
import * as NodeNet from "node:net"
import { AppConfig } from "../config/AppConfig.js"
import { trustedCas } from "../tls/TrustedCas.js"

export class UnsafeUrl extends Data.TaggedError("UnsafeUrl")<{ readonly reason: string }> {}

/** Why a request got no HTTP answer (refused address, DNS, TLS, timeout, reset). */
export class OutboundFailed extends Data.TaggedError("OutboundFailed")<{ readonly message: string }> {}

export interface OutboundAnswer {
  readonly status: number
  /** At most `maxAnswerBytes` of the body, as text. */
  readonly body: string
}

export const maxAnswerBytes = 1024
export const timeoutMillis = 10_000

// ---------------------------------------------------------------------------------------------
// Addresses

const v4ToInt = (address: string) => address.split(".").reduce((acc, part) => (acc * 256) + Number(part), 0)

const v4Ranges: ReadonlyArray<readonly [string, number, string]> = [
  ["0.0.0.0", 8, "this network"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "carrier-grade NAT"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local (cloud metadata)"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol assignments"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "6to4 relay"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved or broadcast"]
]

/** Why an IPv4 address (dotted quad) is not public, or undefined when it is. */
export const refusedV4 = (address: string): string | undefined => {
  const value = v4ToInt(address)
  for (const [base, bits, why] of v4Ranges) {
    const size = 2 ** (32 - bits)
    const start = v4ToInt(base)
    if (value >= start && value < start + size) return why
  }
  return undefined
}

/** The eight 16-bit groups of an IPv6 address (with an optional trailing dotted quad). */
const v6Groups = (address: string): Array<number> => {
  let text = address.toLowerCase().split("%")[0]!
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (quad !== null) {
    const value = v4ToInt(quad[1]!)
    text = text.slice(0, -quad[1]!.length) + `${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`
  }
  const [head, tail] = text.split("::") as [string, string | undefined]
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((group) => parseInt(group, 16)))
  const left = parse(head)
  if (tail === undefined) return left
  const right = parse(tail)
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right]
}

const v4Of = (high: number, low: number) => `${high >>> 8}.${high & 0xff}.${low >>> 8}.${low & 0xff}`

/** Why an IPv6 address is not public, or undefined when it is. */
export const refusedV6 = (address: string): string | undefined => {
  const g = v6Groups(address)
  const [a = 0, b = 0] = g
  const zeroFirst = (n: number) => g.slice(0, n).every((x) => x === 0)
  if (g.every((x) => x === 0)) return "unspecified"
  if (zeroFirst(7) && g[7] === 1) return "loopback"
  const embedded = (v4: string, form: string) => {
    const why = refusedV4(v4)
    return why === undefined ? undefined : `${form} embedding ${v4} (${why})`
  }
  if (zeroFirst(5) && g[5] === 0xffff) return embedded(v4Of(g[6]!, g[7]!), "IPv4-mapped") ?? undefined
  if (zeroFirst(4) && g[4] === 0xffff && g[5] === 0) return "IPv4-translated"
  if (zeroFirst(6)) return embedded(v4Of(g[6]!, g[7]!), "IPv4-compatible") ?? "IPv4-compatible (deprecated)"
  if (a === 0x64 && b === 0xff9b) {
    return g[2] === 0 ? embedded(v4Of(g[6]!, g[7]!), "NAT64") : "NAT64 local use"
  }
  if (a === 0x100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return "discard-only"
  if (a === 0x2001 && b === 0) return "Teredo (embeds an IPv4 address)"
  if (a === 0x2001 && b === 0xdb8) return "documentation"
  if (a === 0x2001 && b < 0x200) return "IETF protocol assignments"
  if (a === 0x2002) return embedded(v4Of(b, g[2]!), "6to4") ?? undefined
  if ((a & 0xfe00) === 0xfc00) return "unique local (private)"
  if ((a & 0xffc0) === 0xfe80) return "link-local"
  if ((a & 0xffc0) === 0xfec0) return "site-local"
  if ((a & 0xff00) === 0xff00) return "multicast"
  return undefined
}

/** Why an IP address (either family) is not public, or undefined when it is. */
export const refusedAddress = (address: string): string | undefined => {
  const family = NodeNet.isIP(address)
  if (family === 4) return refusedV4(address)
  if (family === 6) return refusedV6(address)
  return "not an IP address"
}

// ---------------------------------------------------------------------------------------------
// URLs

const refusedNames = /(^|\.)(localhost|local|internal|localdomain|home\.arpa)$/

export interface UrlPolicy {
  /** `SVC_WEBHOOK_ALLOW_PRIVATE=true`: http, any port and private or loopback hosts. */
  readonly allowPrivate: boolean
}

/**
 * The URL as it will be used, or why it is refused: the syntax and, for an IP literal (in any of
 * the forms the URL parser reads: decimal, hex, octal, short IPv4; IPv6), the address. A name is
 * resolved at connect time, where its address is checked (see `connectLookup`); `checkUrlResolved`
 * also resolves it now.
 */
export const checkUrl = (text: string, policy: UrlPolicy): string | UnsafeUrl => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return new UnsafeUrl({ reason: "not a valid absolute URL" })
  }
  if (url.username !== "" || url.password !== "") return new UnsafeUrl({ reason: "credentials are not allowed" })
  if (text.includes("#")) return new UnsafeUrl({ reason: "a fragment is not allowed" })
  if (policy.allowPrivate) {
    if (url.protocol !== "https:" && url.protocol !== "http:") return new UnsafeUrl({ reason: "must be http or https" })
    return url.href
  }
  if (url.protocol !== "https:") return new UnsafeUrl({ reason: "must be https" })
  if (url.port !== "" && url.port !== "443") return new UnsafeUrl({ reason: "must use port 443" })
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  if (NodeNet.isIP(host) !== 0) {
    const why = refusedAddress(host)
    if (why !== undefined) return new UnsafeUrl({ reason: `the host is not public: ${why}` })
  } else {
    const name = host.replace(/\.$/, "").toLowerCase()
    if (!name.includes(".") || refusedNames.test(name)) {
      return new UnsafeUrl({ reason: "the host is not a public name" })
    }
  }
  return url.href
}

type Resolve = (host: string) => Promise<ReadonlyArray<{ address: string; family: number }>>

const systemResolve: Resolve = (host) => NodeDns.promises.lookup(host, { all: true, verbatim: true })

/**
 * `checkUrl`, then the name resolved now: a name whose addresses include a non-public one is
 * refused. A name that does not resolve now is accepted (its DNS may come later); every connection
 * checks again.
 */
export const checkUrlResolved = (text: string, policy: UrlPolicy, resolve: Resolve = systemResolve) =>
  Effect.gen(function*() {
    const checked = checkUrl(text, policy)
    if (typeof checked !== "string") return yield* Effect.fail(checked)
    if (policy.allowPrivate) return checked
    const host = new URL(checked).hostname
    if (NodeNet.isIP(host.replace(/^\[|\]$/g, "")) !== 0) return checked
    const addresses = yield* Effect.orElseSucceed(Effect.tryPromise(() => resolve(host)), () => [])
    for (const { address } of addresses) {
      const why = refusedAddress(address)
      if (why !== undefined) {
        return yield* Effect.fail(new UnsafeUrl({ reason: `${host} resolves to ${address}: ${why}` }))
      }
    }
    return checked
  })

/**
 * The agent's `lookup`: resolves the name and answers only a public address (the first), which the
 * socket then connects to: the checked address is the one used.
 */
export const connectLookup = (policy: UrlPolicy, resolve: Resolve = systemResolve) =>
(
  hostname: string,
  options: { readonly all?: boolean },
  callback: (error: Error | null, address: string | Array<NodeDns.LookupAddress>, family?: number) => void
) => {
  resolve(hostname).then(
    (addresses) => {
      const usable = policy.allowPrivate
        ? addresses[0]
        : addresses.find((candidate) => refusedAddress(candidate.address) === undefined)
      const refused = addresses.find((candidate) => refusedAddress(candidate.address) !== undefined)
      if (usable === undefined || (!policy.allowPrivate && refused !== undefined)) {
        const why = refused === undefined ? "no address" : `${refused.address}: ${refusedAddress(refused.address)}`
        const error = Object.assign(new Error(`refused to connect to ${hostname} (${why})`), { code: "ESSRF" })
        return callback(error, "", undefined)
      }
      if (options.all) return callback(null, [{ address: usable.address, family: usable.family }])
      callback(null, usable.address, usable.family)
    },
    (error: Error) => callback(error, "", undefined)
  )
}

// ---------------------------------------------------------------------------------------------
// Requests

export interface OutboundShape {
  readonly policy: UrlPolicy
  /** `checkUrlResolved` under the server's policy. */
  readonly check: (url: string) => Effect.Effect<string, UnsafeUrl>
  /**
   * POSTs `body` to `url` (checked again), without following redirects; at most 10 s, at most
   * 1 KiB of the answer read. Any HTTP answer succeeds, whatever its status.
   */
  readonly post: (
    url: string,
    headers: Readonly<Record<string, string>>,
    body: string
  ) => Effect.Effect<OutboundAnswer, OutboundFailed>
}

export interface OutboundOptions extends UrlPolicy {
  /** CAs trusted besides Node's (`SVC_EXTRA_CA_CERTS`, PEM each). */
  readonly extraCaCerts?: ReadonlyArray<string> | undefined
  readonly resolve?: Resolve | undefined
  readonly timeoutMillis?: number | undefined
}

export const make = (options: OutboundOptions): OutboundShape & { readonly close: () => void } => {
  const policy = { allowPrivate: options.allowPrivate }
  const lookup = connectLookup(policy, options.resolve) as unknown as NodeNet.LookupFunction
  const agentOptions = { keepAlive: true, maxSockets: 64, lookup }
  const ca = trustedCas(options.extraCaCerts)
  const https = new NodeHttps.Agent({ ...agentOptions, ...(ca === undefined ? {} : { ca: [...ca] }) })
  const http = new NodeHttp.Agent(agentOptions)
  const timeout = options.timeoutMillis ?? timeoutMillis
  const post: OutboundShape["post"] = (url, headers, body) =>
    Effect.async<OutboundAnswer, OutboundFailed>((resume) => {
      const checked = checkUrl(url, policy)
      if (typeof checked !== "string") return resume(Effect.fail(new OutboundFailed({ message: checked.reason })))
      const target = new URL(checked)
      const secure = target.protocol === "https:"
      const payload = Buffer.from(body)
      let settled = false
      const done = (effect: Effect.Effect<OutboundAnswer, OutboundFailed>) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resume(effect)
      }
      const request = (secure ? NodeHttps : NodeHttp).request(target, {
        method: "POST",
        agent: secure ? https : http,
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(payload.length),
          "user-agent": "svc-webhooks"
        }
      }, (response) => {
        const chunks: Array<Buffer> = []
        let size = 0
        const finish = () => {
          const text = Buffer.concat(chunks).subarray(0, maxAnswerBytes).toString("utf8")
          done(Effect.succeed({ status: response.statusCode ?? 0, body: text }))
        }
        response.on("data", (chunk: Buffer) => {
          if (size >= maxAnswerBytes) return
          chunks.push(chunk)
          size += chunk.length
          // Enough read: the rest is not wanted, and the socket is not reused.
          if (size >= maxAnswerBytes) {
            finish()
            response.destroy()
          }
        })
        response.on("end", finish)
        response.on("error", finish)
        response.on("aborted", finish)
      })
      const timer = setTimeout(() => {
        request.destroy(new Error(`no answer within ${timeout / 1000} s`))
      }, timeout)
      request.on("error", (error) => done(Effect.fail(new OutboundFailed({ message: error.message }))))
      request.end(payload)
      return Effect.sync(() => {
        settled = true
        clearTimeout(timer)
        request.destroy()
      })
    })
  return {
    policy,
    check: (url) => checkUrlResolved(url, policy, options.resolve),
    post,
    close: () => {
      https.destroy()
      http.destroy()
    }
  }
}

export class Outbound extends Context.Tag("svc/http/Outbound")<Outbound, OutboundShape>() {
  static readonly layer = Layer.scoped(
    Outbound,
    Effect.flatMap(AppConfig, (config) =>
      Effect.acquireRelease(
        Effect.sync(() => make({ allowPrivate: config.webhookAllowPrivate, extraCaCerts: config.extraCaCerts })),
        (outbound) => Effect.sync(() => outbound.close())
      ))
  )
  /** With extra options (tests: a CA to trust, a resolver). */
  static readonly layerWith = (options: OutboundOptions) =>
    Layer.scoped(
      Outbound,
      Effect.acquireRelease(Effect.sync(() => make(options)), (outbound) => Effect.sync(() => outbound.close()))
    )
}
