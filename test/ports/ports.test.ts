/**
 * The ports area's rules without a proxy or a machine: which request opens a machine's port (public,
 * a key of its organization, a member's session from svc's own site, a port token) and how long a
 * port token lasts (TestClock). Machines are rows; nothing runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { Accounts } from "../../src/identity/Accounts.js"
import { Sessions } from "../../src/identity/Sessions.js"
import type { RequestFacts } from "../../src/kernel/http/Authenticate.js"
import { Ports, type PortTarget } from "../../src/ports/Ports.js"
import { PortTokens } from "../../src/ports/PortTokens.js"
import { baseUrl, bearer, execute, requestOf, withAreas } from "../identity/support.js"

const machineId = "0193a000-0000-7000-8000-000000000001"
const otherMachineId = "0193a000-0000-7000-8000-000000000002"

/** A machine of `organizationId` exposing 8080 and 9090 privately and 3000 publicly. */
const machine = (id: string, organizationId: string, userId: string) =>
  execute(
    `INSERT INTO machines (id, organization_id, created_by, name, state, projected_state, size, image,
      internet_access, source_kind, created_at, updated_at, ports)
      VALUES (?, ?, ?, ?, 'running', 'running', 'default', 'base', 1, 'image', 0, 0, ?)`,
    id,
    organizationId,
    userId,
    id,
    JSON.stringify([{ port: 3000, public: true }, { port: 8080, public: false }, { port: 9090, public: false }])
  )

const setup = Effect.gen(function*() {
  const accounts = yield* Accounts
  const owner = yield* accounts.bootstrap("owner@example.com")
  const stranger = yield* accounts.bootstrap("stranger@example.com")
  yield* machine(machineId, owner.organization_id, owner.user_id)
  yield* machine(otherMachineId, owner.organization_id, owner.user_id)
  const session = yield* (yield* Sessions).create(owner.user_id, owner.organization_id)
  return { owner, stranger, cookies: { svc_session: session.token } }
})

const target = (port: number, queryToken: string | null = null, id = machineId): PortTarget => ({
  machineId: id,
  port,
  queryToken
})

/** How the request opens the port: the grant, or "not found". */
const access = (request: RequestFacts, to: PortTarget) =>
  Effect.map(
    Effect.flatMap(Ports, (ports) => ports.access(request, to)),
    (result) => result._tag === "Open" ? result.via : "not found"
  )

describe("ports", () => {
  it.scoped("a port token opens its own port of its own machine until it expires", () =>
    withAreas(() =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.parse("2026-11-22T12:00:00Z"))
        const { owner, stranger } = yield* setup
        const tokens = yield* PortTokens
        const requester = { organizationId: owner.organization_id, userId: owner.user_id }
        const made = yield* tokens.create(requester, machineId, 8080, 60)
        assert.strictEqual(made.url, `${baseUrl}/v1/machines/${machineId}/ports/8080/http/`)
        assert.strictEqual(made.expiresAt, Date.parse("2026-11-22T12:01:00Z"))
        assert.isTrue(yield* tokens.opens(made.token, machineId, 8080))
        assert.isFalse(yield* tokens.opens(made.token, machineId, 9090))
        assert.isFalse(yield* tokens.opens(made.token, otherMachineId, 8080))
        assert.isFalse(yield* tokens.opens(made.token + "x", machineId, 8080))
        yield* TestClock.adjust("59 seconds")
        assert.isTrue(yield* tokens.opens(made.token, machineId, 8080))
        yield* TestClock.adjust("1 seconds")
        assert.isFalse(yield* tokens.opens(made.token, machineId, 8080))

        const refused = (effect: Effect.Effect<unknown, { readonly _tag: string }>) =>
          Effect.map(Effect.flip(effect), (error) => error._tag)
        assert.strictEqual(yield* refused(tokens.create(requester, machineId, 4000, 60)), "resource_not_found")
        const foreign = { organizationId: stranger.organization_id, userId: stranger.user_id }
        assert.strictEqual(yield* refused(tokens.create(foreign, machineId, 8080, 60)), "resource_not_found")
        yield* execute("UPDATE machines SET state = 'deleted' WHERE id = ?", otherMachineId)
        assert.strictEqual(yield* refused(tokens.create(requester, otherMachineId, 8080, 60)), "resource_not_found")
      })
    ))

  it.scoped("a public port opens for anyone; a port not exposed, or of an unknown or deleted machine, for no one", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { owner } = yield* setup
        assert.strictEqual(yield* access(requestOf("DELETE"), target(3000)), "public")
        const key = requestOf("GET", { headers: bearer(owner.api_key) })
        assert.strictEqual(yield* access(key, target(8080)), "member")
        assert.strictEqual(yield* access(key, target(4000)), "not found")
        assert.strictEqual(yield* access(key, target(8080, null, "0193a000-0000-7000-8000-00000000ffff")), "not found")
        yield* execute("UPDATE machines SET state = 'deleted' WHERE id = ?", machineId)
        assert.strictEqual(yield* access(key, target(8080)), "not found")
        assert.strictEqual(yield* access(requestOf("GET"), target(3000)), "not found")
      })
    ))

  it.scoped("a private port: a key of the organization or a member's session; changes only from svc's own site", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { cookies, owner, stranger } = yield* setup
        assert.strictEqual(yield* access(requestOf("GET"), target(8080)), "not found")
        assert.strictEqual(
          yield* access(requestOf("GET", { headers: bearer(stranger.api_key) }), target(8080)),
          "not found"
        )
        assert.strictEqual(
          yield* access(requestOf("GET", { headers: { authorization: "Bearer nope" } }), target(8080)),
          "not found"
        )
        // Any preset has R; a key needs no same-site request.
        yield* execute("UPDATE api_keys SET preset = 'read_only' WHERE created_by = ?", owner.user_id)
        const keyFromElsewhere = requestOf("POST", {
          headers: { ...bearer(owner.api_key), origin: "https://evil.example" }
        })
        assert.strictEqual(yield* access(keyFromElsewhere, target(8080)), "member")

        const session = (method: string, headers: Record<string, string> = {}, upgrading = false) =>
          access({ ...requestOf(method, { headers, cookies }), upgrading }, target(8080))
        assert.strictEqual(yield* session("GET"), "member")
        assert.strictEqual(yield* session("GET", { "sec-fetch-site": "cross-site" }), "member")
        assert.strictEqual(yield* session("POST", { origin: baseUrl }), "member")
        assert.strictEqual(yield* session("POST", { origin: "https://evil.example" }), "not found")
        assert.strictEqual(yield* session("DELETE", { "sec-fetch-site": "cross-site" }), "not found")
        assert.strictEqual(yield* session("GET", { origin: "https://evil.example" }, true), "not found")
        // A key that does not open the port leaves the session its turn.
        assert.strictEqual(yield* session("GET", bearer(stranger.api_key)), "member")
        // A stranger's session does not open it.
        const strangers = yield* (yield* Sessions).create(stranger.user_id, stranger.organization_id)
        assert.strictEqual(
          yield* access(requestOf("GET", { cookies: { svc_session: strangers.token } }), target(8080)),
          "not found"
        )
      })
    ))

  it.scoped("a private port: a port token in the header, the query or the cookie", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { owner } = yield* setup
        const made = yield* (yield* PortTokens).create(
          { organizationId: owner.organization_id, userId: owner.user_id },
          machineId,
          8080,
          60
        )
        assert.strictEqual(
          yield* access(requestOf("POST", { headers: { "x-svc-port-token": made.token } }), target(8080)),
          "token"
        )
        assert.strictEqual(yield* access(requestOf("GET"), target(8080, made.token)), "query_token")
        assert.strictEqual(
          yield* access(requestOf("GET", { cookies: { svc_port_token: made.token } }), target(8080)),
          "token"
        )
        // A member's session from another site is refused, token or not: the page is acting as the member.
        const crossSite = requestOf("POST", {
          headers: { origin: "https://evil.example", "x-svc-port-token": made.token },
          cookies: { svc_session: (yield* (yield* Sessions).create(owner.user_id, null)).token }
        })
        assert.strictEqual(yield* access(crossSite, target(8080)), "not found")
        assert.strictEqual(yield* access(requestOf("GET"), target(9090, made.token)), "not found")
        assert.strictEqual(yield* access(requestOf("GET"), target(8080, "forged")), "not found")
      })
    ))
})
