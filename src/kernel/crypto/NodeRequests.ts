/**
 * Requests from one node to another (extensions.md §21): a forwarded request or a chunk copy
 * carries `svc-node: <host id>.<unix seconds>.<mac>`, an HMAC under the shared `SVC_SECRET_KEYS`
 * of the method, the path with its query, the sending host and the time. The receiver accepts it
 * within a minute of its own clock, so a captured header is worth little and nothing else (a
 * client, a machine, a hostile page) can make one. The original request's own credentials still
 * decide who the caller is: the header only says "a node of this service sent this".
 */
import { Clock, Effect, Option } from "effect"
import { SecretBox } from "./SecretBox.js"

export const nodeHeader = "svc-node"
/** A forwarded request's client address, signed with it (the receiver takes it for rate limits and audit). */
export const nodeClientHeader = "svc-node-client"
const purpose = "node request"
/** How far the sender's clock may be from the receiver's. */
const skewSeconds = 60

// A client address is signed after the rest when there is one; none keeps the text of a chunk copy.
const signedText = (method: string, pathWithQuery: string, hostId: string, at: number, client?: string) =>
  `${method.toUpperCase()} ${pathWithQuery} ${hostId} ${at}${client === undefined ? "" : ` ${client}`}`

/**
 * The header value that signs `method pathWithQuery` as sent now by `hostId`, with the client's
 * address (`svc-node-client`) when the request is forwarded for one.
 */
export const signNodeRequest = (method: string, pathWithQuery: string, hostId: string, client?: string) =>
  Effect.gen(function*() {
    const box = yield* SecretBox
    const at = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const mac = yield* box.sign(purpose, signedText(method, pathWithQuery, hostId, at, client))
    return `${hostId}.${at}.${mac}`
  })

/**
 * The sending host of a request whose `svc-node` header is valid now (for `client`, the
 * `svc-node-client` it came with, if any); none for anything else.
 */
export const verifyNodeRequest = (method: string, pathWithQuery: string, header: string | undefined, client?: string) =>
  Effect.gen(function*() {
    const [hostId, atText, mac, ...rest] = (header ?? "").split(".")
    if (hostId === undefined || atText === undefined || mac === undefined || rest.length > 0) return Option.none()
    const at = Number(atText)
    const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    if (!Number.isSafeInteger(at) || Math.abs(now - at) > skewSeconds) return Option.none()
    const box = yield* SecretBox
    const valid = yield* box.verify(purpose, signedText(method, pathWithQuery, hostId, at, client), mac)
    return valid ? Option.some(hostId) : Option.none()
  })
