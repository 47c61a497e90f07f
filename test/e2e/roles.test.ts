/**
 * Roles through the real server. Every endpoint of the API (enumerated from the HttpApi, so a route
 * without a row in test/api/roleTable.ts fails) is called by each role (owner, admin, operator,
 * billing, member) with a browser session and with that member's own full_access key: a role the
 * table allows is let past authorization (any answer but 403 `forbidden`), any other gets 403
 * `forbidden` naming the allowed roles. The probes change nothing: ids name nothing, and every body
 * is refused (422) once authorization has passed. Then the attacks of a plain member and of a
 * demoted operator, judged from what exists afterwards.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Api } from "../../src/Api.js"
import { policyIndex } from "../../src/kernel/http/AuthorizationLive.js"
import { isOutside, type RoleName, roleNames, roleTable, tableKey } from "../api/roleTable.js"
import { client } from "../support/Http.js"
import { runningMachine } from "../support/Machines.js"
import { joined } from "../support/Members.js"
import { signIn } from "../support/SignIn.js"
import { openTerminal } from "../support/Terminals.js"
import { startServer, type TestServer } from "../support/TestServer.js"

/** A caller of the organization: its session's headers, or its own full_access key. */
interface Caller {
  readonly role: RoleName
  readonly credential: "session" | "key"
  readonly headers: Record<string, string>
}

/** One owner and a member of every other role, each with a session and a full_access key of their own. */
const organization = (server: TestServer) =>
  Effect.gen(function*() {
    const owner = yield* server.bootstrap("owner@example.com")
    const org = owner.organization_id
    const ownerBrowser = yield* signIn(server, "owner@example.com")
    const browsers = { owner: ownerBrowser } as Record<RoleName, typeof ownerBrowser>
    for (const role of roleNames.filter((role) => role !== "owner")) {
      browsers[role] = (yield* joined(server, ownerBrowser, org, `${role}@example.com`, role)).browser
    }
    const callers: Array<Caller> = []
    const keys = {} as Record<RoleName, string>
    for (const role of roleNames) {
      const browser = browsers[role]
      const session = { cookie: browser.jar.header(), ...browser.withCsrf, "x-organization-id": org }
      const made = yield* browser.http("POST", "/v1/api-keys", {
        headers: session,
        json: { name: `${role}'s own`, preset: "full_access" }
      })
      assert.strictEqual(made.status, 201, made.text)
      keys[role] = made.body.secret
      callers.push({ role, credential: "session", headers: session })
      callers.push({ role, credential: "key", headers: { authorization: `Bearer ${made.body.secret}` } })
    }
    return { owner, org, browsers, keys, callers }
  })

/** A path with its parameters filled by values that name nothing (the organization's own id aside). */
const pathOf = (path: string, org: string) =>
  path.replace(/:(\w+)/g, (_, name: string) =>
    name === "organization_id"
      ? org
      : name === "port"
      ? "8080"
      : name === "template"
      ? "no-such-template"
      : "00000000-0000-7000-8000-000000000000")

/** The status and problem code of a request; a body that is not JSON (a page, a stream) is not read. */
const probe = (url: string, method: string, headers: Record<string, string>) =>
  Effect.promise(async () => {
    const carries = method !== "GET" && method !== "HEAD"
    const response = await fetch(url, {
      method,
      redirect: "manual",
      headers: { ...headers, ...(carries ? { "content-type": "application/json" } : {}) },
      // A member no route accepts: past authorization every body is refused before anything runs.
      ...(carries ? { body: JSON.stringify({ roles_probe: true }) } : {})
    })
    const json = /json/.test(response.headers.get("content-type") ?? "")
    const body: any = json ? await response.json().catch(() => ({})) : (await response.body?.cancel(), {})
    return { status: response.status, code: body.code as string | undefined, detail: body.detail as string }
  })

describe("roles on every route", () => {
  it.scopedLive(
    "each role, by session and by its own key, is let in or refused 403 forbidden, as the table says",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const { callers, org } = yield* organization(server)
        const endpoints = [...policyIndex(Api)].map(([key, policy]) => {
          const [method, path] = key.split(" ") as [string, string]
          return { method, path, policy, row: roleTable.get(tableKey(method, path)) }
        })
        const missing = endpoints.filter((endpoint) => endpoint.row === undefined).map((e) => `${e.method} ${e.path}`)
        assert.deepStrictEqual(missing, [], "routes without a row in test/api/roleTable.ts")

        const cases = endpoints.flatMap((endpoint) => callers.map((caller) => ({ endpoint, caller })))
        const wrong: Array<string> = []
        yield* Effect.forEach(cases, ({ caller, endpoint: { method, path, policy, row } }) =>
          Effect.map(probe(server.url + pathOf(path, org), method, caller.headers), (reply) => {
            const forbidden = reply.status === 403 && reply.code === "forbidden"
            const label = `${method} ${path} as ${caller.role} by ${caller.credential}: ${reply.status} ${reply.code}`
            if (isOutside(row!)) {
              if (forbidden) {
                wrong.push(label)
              }
            } else if (caller.credential === "key" && policy.access === "S") {
              if (reply.code !== "session_required") {
                wrong.push(`${label} (expected session_required)`)
              }
            } else if (row!.includes(caller.role)) {
              if (forbidden) {
                wrong.push(`${label} (expected to be let in)`)
              }
            } else if (!forbidden || !reply.detail.includes(row!.join(", "))) {
              wrong.push(`${label} (expected 403 forbidden naming ${row!.join(", ")})`)
            }
            // The probes change nothing: a change never succeeds.
            if (method !== "GET" && reply.status < 300) {
              wrong.push(`${label} (a probe was accepted)`)
            }
          }), { concurrency: 4, discard: true })
        assert.deepStrictEqual(wrong, [])
        assert.strictEqual(cases.length, endpoints.length * roleNames.length * 2)
      }),
    { timeout: 300_000 }
  )

  it.scopedLive(
    "a plain member's key makes no machine; a demoted operator's key and session shrink at once, and their terminals end",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const owner = yield* server.bootstrap("owner@example.com")
        const org = owner.organization_id
        const ownerBrowser = yield* signIn(server, "owner@example.com")
        const ownerKey = client(server.url, { key: owner.api_key })
        const keyOf = (browser: typeof ownerBrowser) =>
          Effect.map(
            browser.http("POST", "/v1/api-keys", {
              headers: { ...browser.withCsrf, "x-organization-id": org },
              json: { name: "mine", preset: "full_access" }
            }),
            (reply) => client(server.url, { key: reply.body.secret })
          )

        // A plain member with a full_access key of their own: no machine is made, the owner's are untouched.
        const member = yield* joined(server, ownerBrowser, org, "member@example.com", "member")
        const memberKey = yield* keyOf(member.browser)
        const machine = yield* runningMachine(ownerKey, "owners")
        for (
          const [method, path, json] of [
            ["POST", "/v1/machines", { name: "mine" }],
            ["POST", `/v1/machines/${machine}/exec`, { shell: "touch /tmp/member-was-here" }],
            ["POST", `/v1/machines/${machine}/fork`, { name: "copy" }],
            ["POST", `/v1/machines/${machine}/terminals`, {}],
            ["DELETE", `/v1/machines/${machine}`, undefined]
          ] as const
        ) {
          const reply = yield* memberKey(method, path, json === undefined ? {} : { json })
          assert.strictEqual(reply.status, 403, `${method} ${path}: ${reply.text}`)
          assert.strictEqual(reply.body.code, "forbidden")
          assert.include(reply.body.detail, "owner, admin, operator")
        }
        const listed = (yield* ownerKey("GET", "/v1/machines")).body.items
        assert.deepStrictEqual(listed.map((m: { name: string; state: string }) => [m.name, m.state]), [
          ["owners", "running"]
        ])
        assert.strictEqual((yield* ownerKey("GET", `/v1/machines/${machine}/operations`)).body.items.length, 1)

        // An operator opens a terminal and holds a second ticket; then the owner demotes them to member.
        const operator = yield* joined(server, ownerBrowser, org, "operator@example.com", "operator")
        const operatorKey = yield* keyOf(operator.browser)
        const ticket = () =>
          Effect.map(operatorKey("POST", `/v1/machines/${machine}/terminals`, { json: {} }), (reply) => {
            assert.strictEqual(reply.status, 201, reply.text)
            return reply.body.url as string
          })
        const open = yield* openTerminal(yield* ticket())
        assert.notProperty(open, "refused")
        const unused = yield* ticket()
        const demoted = yield* ownerBrowser.http("PATCH", `/v1/organizations/${org}/members/${operator.userId}`, {
          headers: { ...ownerBrowser.withCsrf, "x-organization-id": org },
          json: { role: "member" }
        })
        assert.strictEqual(demoted.status, 200, demoted.text)
        assert.strictEqual(yield* (open as { closed: Effect.Effect<number> }).closed, 4403)
        assert.deepStrictEqual(yield* openTerminal(unused), { refused: 404 })
        // The same key and the same session, at once: reads still work, changes are refused.
        const stop = yield* operatorKey("POST", `/v1/machines/${machine}/stop`, { json: {} })
        assert.strictEqual(stop.status, 403)
        assert.strictEqual(stop.body.code, "forbidden")
        const bySession = yield* operator.browser.http("POST", `/v1/machines/${machine}/stop`, {
          headers: { ...operator.browser.withCsrf, "x-organization-id": org },
          json: {}
        })
        assert.strictEqual(bySession.body.code, "forbidden")
        assert.strictEqual((yield* operatorKey("GET", `/v1/machines/${machine}`)).body.state, "running")
      }),
    { timeout: 180_000 }
  )
})
