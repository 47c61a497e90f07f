/**
 * The port proxy (extensions.md §5): `{base_url}/v1/machines/{id}/ports/{port}/http/<path>` is
 * forwarded, any method, headers and body streamed both ways, WebSocket upgrades included, to the
 * port inside the machine. It cannot be an HttpApi route (arbitrary methods and paths, raw
 * upgrades), so the Node server hands these requests here before the Effect app sees them
 * (src/Http.ts); the access checks run as Effects on the runtime the layer was built with.
 *
 * Who may open a port is the ports area's rule (src/ports/Ports.ts, over the kernel's
 * Authenticate). A token given in the query of a GET is moved into a cookie scoped to the port's
 * path and the browser is sent to the same URL without it, so the token leaves the address bar and
 * history, and the app's relative links keep working. svc's own credentials are taken off the
 * request before it reaches the machine: the program there must not see a member's key or session.
 */
import { Effect, Runtime } from "effect"
import type * as NodeHttp from "node:http"
import { request as httpRequest } from "node:http"
import type * as NodeStream from "node:stream"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { uuidText } from "../kernel/domain/Ids.js"
import { CSRF_COOKIE, fromNode, type RequestFacts, SESSION_COOKIE } from "../kernel/http/Authenticate.js"
import { InternalError, ResourceNotFound } from "../kernel/http/Errors.js"
import { GuestActionFailed } from "../kernel/http/MachineErrors.js"
import { type ProblemBody, problemContentType, rawProblem, specOf, toBody } from "../kernel/http/Problem.js"
import { Ports } from "./Ports.js"
import { PORT_TOKEN_COOKIE, PORT_TOKEN_HEADER, PORT_TOKEN_PARAM } from "./PortTokens.js"

const proxyPath = new RegExp(`^/v1/machines/(${uuidText})/ports/(\\d{1,5})/http(/[^?]*)?(\\?.*)?$`, "i")

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
  | { readonly _tag: "redirect"; readonly location: string; readonly cookie: string }
  | { readonly _tag: "forward"; readonly stream: NodeStream.Duplex; readonly path: string; readonly headers: Headers }

export const makePortProxy = Effect.gen(function*() {
  const config = yield* AppConfig
  const ports = yield* Ports
  const driver = yield* MachineDriver
  // Captured once: the handlers below run outside any fiber, from Node's server events.
  const run = Runtime.runPromise(yield* Effect.runtime<never>())

  /** The request's headers for the machine: one hop's and svc's own credentials taken off. */
  const forwardedHeaders = (request: NodeHttp.IncomingMessage, facts: RequestFacts, keepUpgrade: boolean): Headers => {
    const headers: Headers = {}
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined || name === PORT_TOKEN_HEADER || (!keepUpgrade && hopByHop.has(name))) continue
      headers[name] = value
    }
    if (/^Bearer\s/i.test(request.headers.authorization ?? "")) delete headers.authorization
    const cookies = Object.entries(facts.cookies)
      .filter(([name]) => name !== SESSION_COOKIE && name !== CSRF_COOKIE && name !== PORT_TOKEN_COOKIE)
    if (cookies.length > 0) headers.cookie = cookies.map(([name, value]) => `${name}=${value}`).join("; ")
    else delete headers.cookie
    headers["x-forwarded-prefix"] = request.url!.slice(0, request.url!.indexOf("/http") + "/http".length)
    return headers
  }

  const decide = (request: NodeHttp.IncomingMessage, target: Target, upgrade: boolean) =>
    Effect.gen(function*() {
      const problem = (body: ProblemBody): Decision => ({ _tag: "problem", body })
      const facts = fromNode(request, upgrade)
      const queryToken = target.query.get(PORT_TOKEN_PARAM)
      const access = yield* ports.access(facts, { machineId: target.machineId, port: target.port, queryToken })
      if (access._tag === "NotFound") return problem(notFound)
      const query = new URLSearchParams(target.query)
      query.delete(PORT_TOKEN_PARAM)
      const search = query.size > 0 ? `?${query}` : ""
      if (access.via === "query_token" && !upgrade && (request.method === "GET" || request.method === "HEAD")) {
        const prefix = `/v1/machines/${target.machineId}/ports/${target.port}/http/`
        const secure = config.baseUrl.startsWith("https:") ? "; Secure" : ""
        const decision: Decision = {
          _tag: "redirect",
          location: `${prefix}${(target.path ?? "/").slice(1)}${search}`,
          cookie: `${PORT_TOKEN_COOKIE}=${queryToken}; Path=${prefix}; HttpOnly; SameSite=Lax${secure}`
        }
        return decision
      }
      const stream = yield* Effect.either(driver.connectPort(target.machineId, target.port))
      if (stream._tag === "Left") {
        const detail = stream.left._tag === "NotRunning"
          ? "The machine is not running"
          : "Nothing in the machine listens on this port"
        return problem(problemOf(new GuestActionFailed({ detail })))
      }
      const decision: Decision = {
        _tag: "forward",
        stream: stream.right,
        path: `${target.path ?? "/"}${search}`,
        headers: forwardedHeaders(request, facts, upgrade)
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
        if (decision._tag === "redirect") {
          response.writeHead(303, { location: decision.location, "set-cookie": decision.cookie })
          return void response.end()
        }
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
        if (decision._tag !== "forward") {
          return rawProblem(socket, decision._tag === "problem" ? decision.body : notFound)
        }
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
