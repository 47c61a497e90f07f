/**
 * Which node serves a request (docs/scale-out.md "Forwarding"). Most of the API is the database's
 * and any node answers it; a few routes need the live host that holds the machine: an unfinished
 * operation's events (they are woken in process), the agent routes (a turn runs on the machine's
 * node), a machine's stats (its cgroups), a terminal's WebSocket and the port proxy (by path, or by
 * Host under `SVC_PORTS_URL`). Such a request about a machine of another host is proxied to that
 * host's node while its lease is live (ForwardProxy.ts), and answered `503 host_unavailable` with
 * `Retry-After` while it is not.
 *
 * A request signed by another node (`svc-node`, NodeRequests.ts) is never forwarded again: if its
 * machine is not this host's after all it gets the 503, not a bounce. Its client's address is the
 * one signed with it; an unsigned or badly signed `svc-node` gives no trust at all.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type * as NodeHttp from "node:http"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { nodeClientHeader, nodeHeader, verifyNodeRequest } from "../kernel/crypto/NodeRequests.js"
import { cidrMatcher } from "../kernel/domain/Cidr.js"
import { uuidText } from "../kernel/domain/Ids.js"
import { portHostMatcher } from "../kernel/domain/Ports.js"
import { forwardedClient } from "../kernel/http/ClientAddress.js"
import { HostLease } from "../kernel/sql/HostLease.js"
import { HostsRepo } from "../kernel/sql/HostsRepo.js"
import { EngineReads, isTerminal } from "../runtime/EngineReads.js"

/** What a live-host route is about: a machine named in its path or Host, or an operation. */
export type LiveSubject =
  | { readonly _tag: "machine"; readonly machineId: string }
  | { readonly _tag: "operation"; readonly operationId: string }
  /** An agent conversation's events: JSON reads are the database's, the stream needs the host. */
  | { readonly _tag: "agentEvents"; readonly machineId: string; readonly stream: boolean }

const machinePaths = [
  new RegExp(`^/v1/machines/(${uuidText})/stats(?:\\?.*)?$`, "i"),
  new RegExp(`^/v1/machines/(${uuidText})/agents/(?:prompt|steer|interrupt)(?:\\?.*)?$`, "i"),
  new RegExp(`^/v1/machines/(${uuidText})/terminals/${uuidText}/socket(?:\\?.*)?$`, "i"),
  new RegExp(`^/v1/machines/(${uuidText})/ports/\\d{1,5}/http(?:[/?].*)?$`, "i")
]
const agentEventsPath = new RegExp(`^/v1/machines/(${uuidText})/agents/events(?:\\?.*)?$`, "i")
const operationEventsPath = new RegExp(`^/v1/operations/(${uuidText})/events(?:\\?.*)?$`, "i")

/**
 * The live-host subject of a request, or undefined for a route any node serves. `ownOrigin` matches
 * a port's own Host (`SVC_PORTS_URL`): every path there is the machine's.
 */
export const liveSubjectOf = (
  request: { readonly url?: string | undefined; readonly headers: NodeHttp.IncomingHttpHeaders },
  ownOrigin?: (host: string | undefined) => { readonly machineId: string } | undefined
): LiveSubject | undefined => {
  const own = ownOrigin?.(request.headers.host)
  if (own !== undefined) return { _tag: "machine", machineId: own.machineId }
  const url = request.url ?? ""
  for (const path of machinePaths) {
    const match = path.exec(url)
    if (match !== null) return { _tag: "machine", machineId: match[1]!.toLowerCase() }
  }
  const events = agentEventsPath.exec(url)
  if (events !== null) {
    const stream = (request.headers.accept ?? "").toLowerCase().includes("text/event-stream")
    return { _tag: "agentEvents", machineId: events[1]!.toLowerCase(), stream }
  }
  const operation = operationEventsPath.exec(url)
  if (operation !== null) return { _tag: "operation", operationId: operation[1]!.toLowerCase() }
  return undefined
}

/** Where a request goes: served here, proxied to another host's node, or refused for now. */
export type Route =
  | { readonly _tag: "local" }
  | { readonly _tag: "forward"; readonly hostId: string; readonly internalUrl: string }
  | { readonly _tag: "unavailable"; readonly hostId: string }

const local: Route = { _tag: "local" }

/** What a node learns of a request from another node's signature, checked before anything else reads it. */
export interface Signed {
  /** The sending host, when `svc-node` verifies. */
  readonly from: string | undefined
  /** The client's address as the sending node saw it (only with `from`). */
  readonly client: string | undefined
}

export const makeForwarding = Effect.gen(function*() {
  const config = yield* AppConfig
  const lease = yield* HostLease
  const hosts = yield* HostsRepo
  const engine = yield* EngineReads
  const sql = yield* SqlClient.SqlClient
  // On SQLite one node is the whole service: every machine is its host's (MachinesRepo.adopt).
  const shared = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const ownOrigin = config.portsUrl === undefined ? undefined : portHostMatcher(config.portsUrl)
  const trusted = config.trustedProxies === undefined || config.trustedProxies.length === 0
    ? () => false
    : cidrMatcher(config.trustedProxies)

  /** The host a subject's machine is on, or none when it is this node's business (or unknown: 404 here). */
  const hostOf = (subject: LiveSubject) =>
    Effect.gen(function*() {
      if (subject._tag === "operation") {
        const operation = yield* engine.operations.find(subject.operationId)
        // A finished operation's events are all in the database: any node streams them.
        if (Option.isNone(operation) || isTerminal(operation.value.status)) return undefined
        const machine = yield* engine.machines.find(operation.value.machine_id)
        return Option.isNone(machine) ? undefined : machine.value.host_id ?? undefined
      }
      const machine = yield* engine.machines.find(subject.machineId)
      return Option.isNone(machine) ? undefined : machine.value.host_id ?? undefined
    })

  return {
    /** Whether any request may need another node (false on SQLite: one node). */
    shared,
    subjectOf: (request: NodeHttp.IncomingMessage) => shared ? liveSubjectOf(request, ownOrigin) : undefined,

    /** The signature of a request from another node; a wrong one counts as none. */
    signed: (method: string, url: string, headers: NodeHttp.IncomingHttpHeaders) =>
      Effect.gen(function*() {
        const header = headers[nodeHeader]
        const client = headers[nodeClientHeader]
        if (typeof header !== "string") return { from: undefined, client: undefined } satisfies Signed
        const text = typeof client === "string" ? client : undefined
        const from = yield* verifyNodeRequest(method, url, header, text)
        return Option.isSome(from)
          ? { from: from.value, client: text } satisfies Signed
          : { from: undefined, client: undefined } satisfies Signed
      }),

    /** The client's address as this node sees it: the peer, or the one trusted proxies name. */
    clientOf: (request: NodeHttp.IncomingMessage) =>
      forwardedClient(
        trusted,
        request.socket.remoteAddress ?? "",
        request.headers["x-forwarded-for"],
        request.headers["x-forwarded-proto"]
      ).address,

    /** Where a request about `subject` goes; `signed` when another node sent it (never forwarded again). */
    route: (subject: LiveSubject, signed: boolean) =>
      Effect.gen(function*() {
        const hostId = yield* hostOf(subject)
        if (hostId === undefined || hostId === lease.hostId) return local
        if (signed) return { _tag: "unavailable", hostId } satisfies Route
        const host = yield* hosts.find(hostId)
        const live = Option.isSome(host) && Number(host.value.lease_expires_at) > Date.now()
        if (live) return { _tag: "forward", hostId, internalUrl: host.value.internal_url } satisfies Route
        // Without its host, an agent's events as JSON are still a read of the database.
        if (subject._tag === "agentEvents" && !subject.stream) return local
        return { _tag: "unavailable", hostId } satisfies Route
      })
  }
})

export type Forwarding = Effect.Effect.Success<typeof makeForwarding>
