/**
 * The port proxy (extensions.md §5): `{base_url}/v1/machines/{id}/ports/{port}/http/<path>` is
 * forwarded, any method, headers and body streamed both ways, WebSocket upgrades included, to the
 * port inside the machine. It cannot be an HttpApi route (arbitrary methods and paths, raw
 * upgrades), so the Node server hands these requests here before the Effect app sees them
 * (src/http/Server.ts); the access checks run as Effects on the runtime the layer was built with.
 *
 * Access: a public port needs nothing; a private one an API key of the machine's organization (any
 * preset: they all have R), a session of a member, or a port token for that machine and port.
 * Anything else, an unknown machine or a port that is not exposed is the same 404, so the proxy
 * does not tell which machines exist. svc's own credentials are taken off the request before it
 * reaches the machine: the program there must not see a member's key or session.
 */
import * as Cookies from "@effect/platform/Cookies"
import { Effect, Option, Runtime } from "effect"
import type * as NodeHttp from "node:http"
import { request as httpRequest } from "node:http"
import type * as NodeStream from "node:stream"
import { InternalError, ResourceNotFound } from "../api/Errors.js"
import { GuestActionFailed } from "../api/MachineErrors.js"
import { type ProblemBody, problemContentType, specOf, toBody } from "../api/Problem.js"
import { findPort, parsePorts } from "../domain/Ports.js"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { MachinesRepo } from "../persistence/MachinesRepo.js"
import { Accounts } from "../services/Accounts.js"
import { ApiKeys } from "../services/ApiKeys.js"
import { PortTokens } from "../services/PortTokens.js"
import { CSRF_COOKIE, SESSION_COOKIE, Sessions } from "../services/Sessions.js"

export const PORT_TOKEN_HEADER = "x-svc-port-token"
export const PORT_TOKEN_PARAM = "svc_port_token"

const proxyPath =
  /^\/v1\/machines\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/ports\/(\d{1,5})\/http(\/[^?]*)?(\?.*)?$/i

interface Target {
  readonly machineId: string
  readonly port: number
  /** `/` and what follows `/http`, without the query. */
  readonly path: string | undefined
  readonly query: URLSearchParams
}

/** The proxy target a request URL names, or undefined for every other URL (the API's). */
export const targetOf = (url: string | undefined): Target | undefined => {
  const match = proxyPath.exec(url ?? "")
  if (match === null) return undefined
  return {
    machineId: match[1]!.toLowerCase(),
    port: Number(match[2]),
    path: match[3],
    query: new URLSearchParams(match[4]?.slice(1) ?? "")
  }
}

/** Headers that belong to one hop (RFC 9110 §7.6.1), never forwarded as they are. */
const hopByHop = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

type Headers = Record<string, string | ReadonlyArray<string>>

const problemOf = (error: ResourceNotFound | GuestActionFailed): ProblemBody => toBody(error, specOf(error)!)

const notFound = problemOf(new ResourceNotFound({ detail: "Not found" }))

type Decision =
  | { readonly _tag: "problem"; readonly body: ProblemBody }
  | { readonly _tag: "forward"; readonly stream: NodeStream.Duplex; readonly path: string; readonly headers: Headers }

export const makePortProxy = Effect.gen(function*() {
  const machines = yield* MachinesRepo
  const apiKeys = yield* ApiKeys
  const sessions = yield* Sessions
  const accounts = yield* Accounts
  const portTokens = yield* PortTokens
  const driver = yield* MachineDriver
  // Captured once: the handlers below run outside any fiber, from Node's server events.
  const run = Runtime.runPromise(yield* Effect.runtime<never>())

  /** Whether the request carries a credential that opens the private port. */
  const allowed = (request: NodeHttp.IncomingMessage, target: Target, organizationId: string) =>
    Effect.gen(function*() {
      const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "")
      if (bearer !== null) {
        const key = yield* Effect.option(apiKeys.authenticate(bearer[1]!))
        if (Option.isSome(key) && key.value.organization_id === organizationId) return true
      }
      const session = Cookies.parseHeader(request.headers.cookie ?? "")[SESSION_COOKIE]
      if (session !== undefined) {
        const found = yield* sessions.find(session)
        if (Option.isSome(found) && Option.isSome(yield* accounts.membership(organizationId, found.value.user_id))) {
          return true
        }
      }
      const header = request.headers[PORT_TOKEN_HEADER]
      const token = typeof header === "string" ? header : target.query.get(PORT_TOKEN_PARAM)
      return token !== null && (yield* portTokens.opens(token, target.machineId, target.port))
    })

  /** The request's headers for the machine: one hop's and svc's own credentials taken off. */
  const forwardedHeaders = (request: NodeHttp.IncomingMessage, keepUpgrade: boolean): Headers => {
    const headers: Headers = {}
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined || name === PORT_TOKEN_HEADER || (!keepUpgrade && hopByHop.has(name))) continue
      headers[name] = value
    }
    if (/^Bearer\s/i.test(request.headers.authorization ?? "")) delete headers.authorization
    const cookies = Object.entries(Cookies.parseHeader(request.headers.cookie ?? ""))
      .filter(([name]) => name !== SESSION_COOKIE && name !== CSRF_COOKIE)
    if (cookies.length > 0) headers.cookie = cookies.map(([name, value]) => `${name}=${value}`).join("; ")
    else delete headers.cookie
    headers["x-forwarded-prefix"] = request.url!.slice(0, request.url!.indexOf("/http") + "/http".length)
    return headers
  }

  const decide = (request: NodeHttp.IncomingMessage, target: Target, upgrade: boolean) =>
    Effect.gen(function*() {
      const problem = (body: ProblemBody): Decision => ({ _tag: "problem", body })
      const machine = yield* machines.find(target.machineId)
      if (Option.isNone(machine) || machine.value.state === "deleted") return problem(notFound)
      const exposed = findPort(parsePorts(machine.value.ports), target.port)
      if (exposed === undefined) return problem(notFound)
      if (!exposed.public && !(yield* allowed(request, target, machine.value.organization_id))) {
        return problem(notFound)
      }
      const stream = yield* Effect.either(driver.connectPort(target.machineId, target.port))
      if (stream._tag === "Left") {
        const detail = stream.left._tag === "NotRunning"
          ? "The machine is not running"
          : "Nothing in the machine listens on this port"
        return problem(problemOf(new GuestActionFailed({ detail })))
      }
      const query = new URLSearchParams(target.query)
      query.delete(PORT_TOKEN_PARAM)
      const search = query.size > 0 ? `?${query}` : ""
      const decision: Decision = {
        _tag: "forward",
        stream: stream.right,
        path: `${target.path ?? "/"}${search}`,
        headers: forwardedHeaders(request, upgrade)
      }
      return decision
    })

  const nothingListening = (port: number) =>
    problemOf(new GuestActionFailed({ detail: `Nothing answered on port ${port} in the machine` }))

  const sendProblem = (response: NodeHttp.ServerResponse, body: ProblemBody) => {
    if (response.headersSent) return void response.destroy()
    response.writeHead(body.status, { "content-type": problemContentType })
    response.end(JSON.stringify(body))
  }

  const rawProblem = (socket: NodeStream.Duplex, body: ProblemBody) => {
    const text = JSON.stringify(body)
    socket.end(
      `HTTP/1.1 ${body.status} ${body.title}\r\ncontent-type: ${problemContentType}\r\n` +
        `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`
    )
  }

  // A defect in the checks (the database gone, say): the same answer the API gives one.
  const failed = () => {
    const error = new InternalError({ detail: "Internal error" })
    return toBody(error, specOf(error)!)
  }

  return {
    targetOf,

    request: (request: NodeHttp.IncomingMessage, response: NodeHttp.ServerResponse, target: Target) => {
      if (target.path === undefined) {
        // `/http` alone: relative links of the app only resolve under `/http/`.
        const [path, query] = request.url!.split("?", 2)
        response.writeHead(308, { location: `${path}/${query === undefined ? "" : `?${query}`}` })
        return void response.end()
      }
      run(decide(request, target, false)).then((decision) => {
        if (decision._tag === "problem") return sendProblem(response, decision.body)
        const upstream = httpRequest({
          method: request.method,
          path: decision.path,
          headers: decision.headers as NodeHttp.OutgoingHttpHeaders,
          createConnection: () => decision.stream as any
        })
        upstream.on("response", (answer) => {
          const headers: Headers = {}
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value !== undefined && !hopByHop.has(name)) headers[name] = value
          }
          response.writeHead(answer.statusCode ?? 502, answer.statusMessage, headers as NodeHttp.OutgoingHttpHeaders)
          answer.pipe(response)
        })
        upstream.on("error", () => sendProblem(response, nothingListening(target.port)))
        // A client that goes away takes its upstream request (and relay) with it.
        response.on("close", () => {
          upstream.destroy()
          decision.stream.destroy()
        })
        request.pipe(upstream)
      }, () => sendProblem(response, failed()))
    },

    upgrade: (request: NodeHttp.IncomingMessage, socket: NodeStream.Duplex, head: Buffer, target: Target) => {
      socket.on("error", () => socket.destroy())
      run(decide(request, target, true)).then((decision) => {
        if (decision._tag === "problem") return rawProblem(socket, decision.body)
        const upstream = decision.stream
        let answered = false
        const lines = [`${request.method} ${decision.path} HTTP/1.1`]
        for (const [name, value] of Object.entries(decision.headers)) {
          for (const one of typeof value === "string" ? [value] : value) lines.push(`${name}: ${one}`)
        }
        upstream.on("data", () => (answered = true))
        upstream.on("error", () => (answered ? socket.destroy() : rawProblem(socket, nothingListening(target.port))))
        upstream.on("end", () => {
          if (!answered) rawProblem(socket, nothingListening(target.port))
        })
        socket.on("close", () => upstream.destroy())
        upstream.write(`${lines.join("\r\n")}\r\n\r\n`)
        if (head.length > 0) upstream.write(head)
        // The machine's answer (101 and then frames) goes back as it is; so does the client's.
        upstream.pipe(socket)
        socket.pipe(upstream)
      }, () => rawProblem(socket, failed()))
    }
  }
})

export type PortProxy = Effect.Effect.Success<typeof makePortProxy>

/** Wraps `server` so that port proxy requests and upgrades go to `proxy`, everything else as before. */
export const withPortProxy = (server: NodeHttp.Server, proxy: PortProxy): NodeHttp.Server => {
  const emit = server.emit.bind(server) as (event: string, ...args: Array<any>) => boolean
  server.emit = ((event: string, ...args: Array<any>) => {
    if (event === "request" || event === "upgrade") {
      const target = proxy.targetOf((args[0] as NodeHttp.IncomingMessage).url)
      if (target !== undefined) {
        if (event === "request") proxy.request(args[0], args[1], target)
        else proxy.upgrade(args[0], args[1], args[2], target)
        return true
      }
    }
    return emit(event, ...args)
  }) as typeof server.emit
  return server
}
