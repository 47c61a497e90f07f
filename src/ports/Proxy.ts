/**
 * The port proxy (extensions.md §5): `{base_url}/v1/machines/{id}/ports/{port}/http/<path>` is
 * forwarded, any method, headers and body streamed both ways, WebSocket upgrades included, to the
 * port inside the machine. It cannot be an HttpApi route (arbitrary methods and paths, raw
 * upgrades), so the Node server hands these requests here before the Effect app sees them
 * (src/Http.ts); the access checks run as Effects on the runtime the layer was built with.
 *
 * With `SVC_PORTS_URL` a request whose Host is a port's own name (`{port}-{machine}.ports...`) is
 * that port's, whatever its path. What crosses either way is filtered in MachineHeaders.ts: the
 * machine never gets svc's credentials, and on svc's origin its answers are sandboxed.
 *
 * Who may open a port is the ports area's rule (src/ports/Ports.ts, over the kernel's
 * Authenticate). A token given in the query of a GET is moved into a cookie scoped to the port's
 * path and the browser is sent to the same URL without it, so the token leaves the address bar and
 * history, and the app's relative links keep working.
 */
import { Effect, Runtime } from "effect"
import type * as NodeHttp from "node:http"
import { request as httpRequest } from "node:http"
import type * as NodeStream from "node:stream"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { uuidText } from "../kernel/domain/Ids.js"
import { portHostMatcher } from "../kernel/domain/Ports.js"
import { fromNode } from "../kernel/http/Authenticate.js"
import { InternalError, ResourceNotFound } from "../kernel/http/Errors.js"
import { GuestActionFailed } from "../kernel/http/MachineErrors.js"
import { type ProblemBody, problemContentType, rawProblem, specOf, toBody } from "../kernel/http/Problem.js"
import {
  type AnswerOrigin,
  formatAnswerHead,
  parseAnswerHead,
  requestHeadersForMachine,
  responseHeadersFromMachine
} from "./MachineHeaders.js"
import { Ports } from "./Ports.js"
import { PORT_TOKEN_COOKIE, PORT_TOKEN_PARAM } from "./PortTokens.js"

const proxyPath = new RegExp(`^/v1/machines/(${uuidText})/ports/(\\d{1,5})/http(/[^?]*)?(\\?.*)?$`, "i")

interface Target {
  readonly machineId: string
  readonly port: number
  /** `/` and what follows `/http` (or the whole path on an origin of its own), without the query. */
  readonly path: string | undefined
  readonly query: URLSearchParams
  /** svc's origin (the answer sandboxed) or the port's own (`SVC_PORTS_URL`). */
  readonly origin: AnswerOrigin
  /** What precedes `path` in the browser's address: the port token cookie's path, the app's prefix. */
  readonly prefix: string
}

/** The proxy target a URL names under svc's origin, or undefined for every other URL (the API's). */
export const targetOf = (url: string | undefined): Target | undefined => {
  const match = proxyPath.exec(url ?? "")
  if (match === null) return undefined
  const machineId = match[1]!.toLowerCase()
  const port = Number(match[2])
  return {
    machineId,
    port,
    path: match[3],
    query: new URLSearchParams(match[4]?.slice(1) ?? ""),
    origin: "svc",
    prefix: `/v1/machines/${machineId}/ports/${port}/http`
  }
}

/** A request to a port's own origin (`SVC_PORTS_URL`): every path of that host is the port's. */
const ownOriginTarget = (found: { readonly machineId: string; readonly port: number }, url: string | undefined) => {
  const [path = "/", query = ""] = (url ?? "/").split("?", 2)
  const target: Target = {
    machineId: found.machineId,
    port: found.port,
    path: path.startsWith("/") ? path : `/${path}`,
    query: new URLSearchParams(query),
    origin: "own",
    prefix: ""
  }
  return target
}

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
  const forwardedHeaders = (request: NodeHttp.IncomingMessage, target: Target, keepUpgrade: boolean): Headers => {
    const headers = requestHeadersForMachine(request.headers, keepUpgrade)
    if (target.prefix !== "") headers["x-forwarded-prefix"] = target.prefix
    return headers
  }

  /** Whether the browser reaches this answer over https (the port token cookie is then Secure). */
  const secureOrigin = (target: Target) =>
    (target.origin === "own" && config.portsUrl !== undefined ? config.portsUrl : config.baseUrl).startsWith("https:")

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
        const prefix = `${target.prefix}/`
        const secure = secureOrigin(target) ? "; Secure" : ""
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
        headers: forwardedHeaders(request, target, upgrade)
      }
      return decision
    })

  /** The most of a machine's answer head to an upgrade read before it is given up (as Node's own limit). */
  const maxAnswerHeadBytes = 16 * 1024

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

  const ownOrigin = config.portsUrl === undefined ? undefined : portHostMatcher(config.portsUrl)

  return {
    /** The port a request is for: by its Host on a port's own origin, else by its path on svc's. */
    targetOf: (request: NodeHttp.IncomingMessage): Target | undefined => {
      const own = ownOrigin?.(request.headers.host)
      return own === undefined ? targetOf(request.url) : ownOriginTarget(own, request.url)
    },

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
          const headers = responseHeadersFromMachine(answer.headers, target.origin)
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
        const lines = [`${request.method} ${decision.path} HTTP/1.1`]
        for (const [name, value] of Object.entries(decision.headers)) {
          for (const one of typeof value === "string" ? [value] : value) lines.push(`${name}: ${one}`)
        }
        // The machine's answer head (101 or any other) is read whole and filtered as any answer's
        // headers are; then its bytes and the client's go through as they are.
        let answer = Buffer.alloc(0)
        let relaying = false
        let failedOnce = false
        const giveUp = () => {
          if (relaying) return void socket.destroy()
          if (failedOnce) return
          failedOnce = true
          rawProblem(socket, nothingListening(target.port))
        }
        const onHead = (chunk: Buffer) => {
          answer = Buffer.concat([answer, chunk])
          const end = answer.indexOf("\r\n\r\n")
          if (end < 0) {
            if (answer.length > maxAnswerHeadBytes) upstream.destroy()
            return
          }
          const parsed = parseAnswerHead(answer.subarray(0, end).toString("latin1"))
          if (parsed === undefined) return void upstream.destroy()
          upstream.off("data", onHead)
          relaying = true
          const upgraded = / 101\b/.test(parsed.statusLine)
          const headers = responseHeadersFromMachine(parsed.headers, target.origin, upgraded)
          socket.write(formatAnswerHead(parsed.statusLine, headers))
          const rest = answer.subarray(end + 4)
          if (rest.length > 0) socket.write(rest)
          upstream.pipe(socket)
          socket.pipe(upstream)
        }
        upstream.on("data", onHead)
        upstream.on("error", giveUp)
        upstream.on("end", () => {
          if (!relaying) giveUp()
        })
        upstream.on("close", () => {
          if (!relaying) giveUp()
        })
        socket.on("close", () => upstream.destroy())
        upstream.write(`${lines.join("\r\n")}\r\n\r\n`)
        if (head.length > 0) upstream.write(head)
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
      const target = proxy.targetOf(args[0] as NodeHttp.IncomingMessage)
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
