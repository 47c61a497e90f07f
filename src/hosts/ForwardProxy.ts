/**
 * The piping of forwarding (Forwarding.ts decides): a request for another host's node goes there
 * whole, method, path, query, headers and body, streamed both ways (an event stream as it comes,
 * unbuffered), a WebSocket upgrade as raw bytes both ways after the head; signed with `svc-node`
 * and the client's address (`svc-node-client`). It sits in front of everything on the Node server
 * (src/Http.ts): the port proxy and terminals see only what this node serves itself.
 *
 * Each forwarded request has a connection of its own (no keep-alive agent): the receiving node
 * gives that connection the signed client's address, for the rate limits, the sign-in guards and the
 * audit log, and a connection never carries a signed and an unsigned request.
 */
import { Effect, Runtime } from "effect"
import type * as NodeHttp from "node:http"
import { request as httpRequest } from "node:http"
import { request as httpsRequest } from "node:https"
import * as NodeNet from "node:net"
import type * as NodeStream from "node:stream"
import * as NodeTls from "node:tls"
import { nodeClientHeader, nodeHeader, signNodeRequest } from "../kernel/crypto/NodeRequests.js"
import type { SecretBox } from "../kernel/crypto/SecretBox.js"
import { InternalError } from "../kernel/http/Errors.js"
import { HostUnavailable } from "../kernel/http/MachineErrors.js"
import { type ProblemBody, problemContentType, rawProblem, specOf, toBody } from "../kernel/http/Problem.js"
import { HostLease } from "../kernel/sql/HostLease.js"
import { type Forwarding, makeForwarding, type Route } from "./Forwarding.js"

/** What a refused client is told to wait before it tries again. */
export const retryAfterSeconds = 5

/** Headers of one hop only, and the signature's, which a client may not send through. */
const notForwarded = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "x-forwarded-for",
  nodeHeader,
  nodeClientHeader
])

const unavailable = toBody(
  new HostUnavailable({ detail: "The node that runs this machine cannot be reached now; try again in a few seconds" }),
  specOf(new HostUnavailable({ detail: "" }))!
)
const internal = toBody(new InternalError({ detail: "Internal error" }), specOf(new InternalError({ detail: "" }))!)

const sendProblem = (response: NodeHttp.ServerResponse, body: ProblemBody) => {
  if (response.headersSent) return void response.destroy()
  const retry = body.status === 503 ? { "retry-after": String(retryAfterSeconds) } : {}
  response.writeHead(body.status, { "content-type": problemContentType, ...retry })
  response.end(JSON.stringify(body))
}

const rawUnavailable = (socket: NodeStream.Duplex) => {
  const text = JSON.stringify(unavailable)
  socket.end(
    `HTTP/1.1 503 ${unavailable.title}\r\ncontent-type: ${problemContentType}\r\n` +
      `retry-after: ${retryAfterSeconds}\r\ncontent-length: ${
        Buffer.byteLength(text)
      }\r\nconnection: close\r\n\r\n${text}`
  )
}

/** The connection's peer address as the signed forward names it (none: the socket's own again). */
const setPeer = (socket: NodeNet.Socket, client: string | undefined) => {
  if (client !== undefined && client !== "") {
    Object.defineProperty(socket, "remoteAddress", { value: client, configurable: true, enumerable: true })
  } else if (Object.prototype.hasOwnProperty.call(socket, "remoteAddress")) {
    delete (socket as { remoteAddress?: string }).remoteAddress
  }
}

const endpointOf = (internalUrl: string) => {
  const url = new URL(internalUrl)
  const https = url.protocol === "https:"
  return { https, hostname: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || (https ? 443 : 80)) }
}

export const makeForwardProxy = Effect.gen(function*() {
  const forwarding: Forwarding = yield* makeForwarding
  const lease = yield* HostLease
  // Captured once: the handlers below run outside any fiber, from Node's server events.
  const runtime = yield* Effect.runtime<SecretBox>()
  const runSync = Runtime.runSync(runtime)
  const runPromise = Runtime.runPromise(runtime)

  const signatureOf = (request: NodeHttp.IncomingMessage, client: string) =>
    runSync(signNodeRequest(request.method ?? "GET", request.url ?? "/", lease.hostId, client))

  const forwardRequest = (
    request: NodeHttp.IncomingMessage,
    response: NodeHttp.ServerResponse,
    internalUrl: string,
    client: string
  ) => {
    const headers: NodeHttp.OutgoingHttpHeaders = {}
    for (const [name, value] of Object.entries(request.headers)) {
      if (!notForwarded.has(name) && value !== undefined) headers[name] = value
    }
    headers[nodeHeader] = signatureOf(request, client)
    headers[nodeClientHeader] = client
    const target = endpointOf(internalUrl)
    const upstream = (target.https ? httpsRequest : httpRequest)({
      hostname: target.hostname,
      port: target.port,
      method: request.method,
      path: request.url,
      headers,
      agent: false
    })
    upstream.on("response", (answer) => {
      const answerHeaders: NodeHttp.OutgoingHttpHeaders = {}
      for (const [name, value] of Object.entries(answer.headers)) {
        if (!notForwarded.has(name) && value !== undefined) answerHeaders[name] = value
      }
      response.writeHead(answer.statusCode ?? 502, answer.statusMessage, answerHeaders)
      // An event stream's head goes at once; its events as they come.
      response.flushHeaders()
      answer.pipe(response)
    })
    // The owner went away between the lease's check and now (or midway: the stream is cut).
    upstream.on("error", () => sendProblem(response, unavailable))
    response.on("close", () => upstream.destroy())
    request.pipe(upstream)
  }

  const forwardUpgrade = (
    request: NodeHttp.IncomingMessage,
    socket: NodeStream.Duplex,
    head: Buffer,
    internalUrl: string,
    client: string
  ) => {
    const lines = [`${request.method} ${request.url} HTTP/1.1`]
    for (let i = 0; i + 1 < request.rawHeaders.length; i += 2) {
      const name = request.rawHeaders[i]!
      const lower = name.toLowerCase()
      if (lower === nodeHeader || lower === nodeClientHeader || lower === "x-forwarded-for") continue
      lines.push(`${name}: ${request.rawHeaders[i + 1]}`)
    }
    lines.push(`${nodeHeader}: ${signatureOf(request, client)}`, `${nodeClientHeader}: ${client}`)
    const target = endpointOf(internalUrl)
    let relaying = false
    const upstream: NodeNet.Socket = target.https
      ? NodeTls.connect({ host: target.hostname, port: target.port, servername: target.hostname })
      : NodeNet.connect({ host: target.hostname, port: target.port })
    upstream.on(target.https ? "secureConnect" : "connect", () => {
      relaying = true
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`)
      if (head.length > 0) upstream.write(head)
      upstream.pipe(socket)
      socket.pipe(upstream)
    })
    upstream.on("error", () => relaying ? socket.destroy() : rawUnavailable(socket))
    upstream.on("close", () => {
      if (relaying) socket.destroy()
    })
    socket.on("close", () => upstream.destroy())
  }

  /**
   * Serves `event` ("request" or "upgrade") if it must go elsewhere (or be refused); calls
   * `serveHere` when this node serves it itself, at once or once decided.
   */
  const handle = (event: "request" | "upgrade", args: Array<any>, serveHere: () => void) => {
    const request = args[0] as NodeHttp.IncomingMessage
    const claimed = request.headers[nodeHeader] !== undefined || request.headers[nodeClientHeader] !== undefined
    const signed = claimed
      ? runSync(forwarding.signed(request.method ?? "GET", request.url ?? "/", request.headers))
      : { from: undefined, client: undefined }
    // Nothing after this point reads a signature: the signed address is the connection's now. Except
    // the node-only routes under /internal/ (src/snapshots/ChunkRoutes.ts), which check it themselves.
    if (!(request.url ?? "").startsWith("/internal/")) {
      delete request.headers[nodeHeader]
      delete request.headers[nodeClientHeader]
    }
    setPeer(request.socket, signed.client)
    const subject = forwarding.subjectOf(request)
    if (subject === undefined) return serveHere()
    runPromise(forwarding.route(subject, signed.from !== undefined)).then(
      (route: Route) => {
        if (route._tag === "local") return serveHere()
        if (event === "request") {
          const response = args[1] as NodeHttp.ServerResponse
          if (route._tag === "unavailable") return sendProblem(response, unavailable)
          return forwardRequest(request, response, route.internalUrl, forwarding.clientOf(request))
        }
        const socket = args[1] as NodeStream.Duplex
        socket.on("error", () => socket.destroy())
        if (route._tag === "unavailable") return rawUnavailable(socket)
        forwardUpgrade(request, socket, args[2] as Buffer, route.internalUrl, forwarding.clientOf(request))
      },
      () => {
        if (event === "request") sendProblem(args[1] as NodeHttp.ServerResponse, internal)
        else rawProblem(args[1] as NodeStream.Duplex, internal)
      }
    )
  }

  return { handle }
})

export type ForwardProxy = Effect.Effect.Success<typeof makeForwardProxy>

/** Wraps `server` so that every request and upgrade is first routed by `proxy` (another node, or here). */
export const withForwarding = (server: NodeHttp.Server, proxy: ForwardProxy): NodeHttp.Server => {
  const emit = server.emit.bind(server) as (event: string, ...args: Array<any>) => boolean
  server.emit = ((event: string, ...args: Array<any>) => {
    if (event !== "request" && event !== "upgrade") return emit(event, ...args)
    proxy.handle(event, args, () => void emit(event, ...args))
    return true
  }) as typeof server.emit
  return server
}
