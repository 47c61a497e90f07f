/**
 * The operator's routes end to end on real sandboxes: the token (404 while unset, 401 when wrong),
 * suspension (machines stopped with `stop_reason` `suspension`, a running exec ended, every route
 * that runs or makes machines refused with 403 `organization_suspended`, reads kept, limits
 * `suspended`), idempotence both ways, resume leaving machines stopped, and the audit rows written
 * with each action. Live clock: real processes.
 */
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Option, Redacted } from "effect"
import { client } from "../support/Http.js"
import { type Api, eventually, runningMachine, settled, sh } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const token = "operator-token-for-tests"

const setup = Effect.gen(function*() {
  const server = yield* startServer({ runtime: "sandbox", operatorToken: Option.some(Redacted.make(token)) })
  const owner = yield* server.bootstrap("owner@example.com")
  const api = client(server.url, { key: owner.api_key })
  const operator = client(server.url, { headers: { "x-svc-operator-token": token } })
  return { server, owner, api, operator }
})

const action = { operator: "ops@example.com", reason: "crypto mining reported" }

/** The machine once its state is `state`. */
const machineIn = (api: Api, id: string, state: string) =>
  eventually(
    Effect.map(api("GET", `/v1/machines/${id}`), (reply) => reply.body?.state === state ? reply.body : undefined)
  )

describe("operator", () => {
  it.scopedLive("operator routes answer 404 while no token is configured, 401 without the right one", () =>
    Effect.gen(function*() {
      const unset = yield* startServer()
      const owner = yield* unset.bootstrap("owner@example.com")
      const path = `/v1/operator/organizations/${owner.organization_id}/suspend`
      const closed = yield* client(unset.url, { headers: { "x-svc-operator-token": token } })("POST", path, {
        json: action
      })
      assert.strictEqual(closed.status, 404)
      assert.strictEqual((yield* client(unset.url)("GET", "/v1/operator/abuse-flags")).status, 404)

      const { operator, server } = yield* setup
      for (const headers of [{}, { "x-svc-operator-token": "wrong" }, { "x-svc-operator-token": token + "x" }]) {
        const refused = yield* client(server.url, { headers })("GET", "/v1/operator/abuse-flags")
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.body.code, "unauthenticated")
      }
      // An API key is no operator token.
      const keyed = yield* client(server.url, { key: (yield* server.bootstrap("x@example.com")).api_key })(
        "GET",
        "/v1/operator/abuse-flags"
      )
      assert.strictEqual(keyed.status, 401)
      const listed = yield* operator("GET", "/v1/operator/abuse-flags")
      assert.strictEqual(listed.status, 200)
      assert.deepStrictEqual(listed.body, { items: [] })
      const unknown = yield* operator(
        "POST",
        "/v1/operator/organizations/0193b8f0-0000-7000-8000-000000000000/suspend",
        {
          json: action
        }
      )
      assert.strictEqual(unknown.status, 404)
      const flag = yield* operator("POST", "/v1/operator/abuse-flags/0193b8f0-0000-7000-8000-000000000000/resolve", {
        json: { note: "n", operator: "o", resolution: "dismissed" }
      })
      assert.strictEqual(flag.status, 404)
    }))

  it.scopedLive(
    "suspension stops the machines and ends a running exec, refuses every use, keeps reads; resume leaves them stopped",
    () =>
      Effect.gen(function*() {
        const { api, operator, owner, server } = yield* setup
        const busy = yield* runningMachine(api, "busy", { size: "small" })
        const other = yield* runningMachine(api, "other", { size: "small" })
        const idle = yield* runningMachine(api, "idle", { size: "small", start: false })
        const exec = yield* api("POST", `/v1/machines/${busy}/exec`, { json: { shell: "sleep 300" } })
        assert.strictEqual(exec.status, 202)
        yield* eventually(Effect.map(api("GET", `/v1/operations/${exec.body.operation_id}`), (reply) =>
          reply.body.status === "running" ? true : undefined))

        const path = `/v1/operator/organizations/${owner.organization_id}`
        const suspended = yield* operator("POST", `${path}/suspend`, { json: action })
        assert.strictEqual(suspended.status, 200, suspended.text)
        assert.deepInclude(suspended.body, {
          organization_id: owner.organization_id,
          already_suspended: false,
          reason: action.reason,
          machines_stopping: 2,
          channels_revoked: 0,
          tickets_revoked: 0
        })
        const execDone = yield* settled(api, exec.body.operation_id, 30_000)
        assert.deepStrictEqual([execDone.status, execDone.error_code], ["failed", "cancelled"], "the exec was ended")
        for (const id of [busy, other]) {
          const machine = yield* machineIn(api, id, "stopped")
          assert.strictEqual(machine.last_stop_reason, "suspension")
        }

        // Every use is refused; nothing is accepted.
        const refused: Array<[string, string, unknown?]> = [
          ["POST", "/v1/machines", { name: "new" }],
          ["POST", `/v1/machines/${idle}/start`],
          ["POST", `/v1/machines/${busy}/restart`],
          ["POST", `/v1/machines/${busy}/fork`, { name: "forked" }],
          ["POST", `/v1/machines/${busy}/restore`, { name: "restored" }],
          ["POST", `/v1/machines/${busy}/exec`, { shell: "true" }],
          ["POST", `/v1/machines/${busy}/files/write`, { path: "/tmp/x", data_base64: "eA==" }],
          ["POST", `/v1/machines/${busy}/files/read`, { ranges: [{ path: "/tmp/x", offset: 0, size: 1 }] }],
          ["POST", `/v1/machines/${busy}/agents/prompt`, { provider: "claude_code", text: "hi" }]
        ]
        for (const [method, route, json] of refused) {
          const reply = yield* api(method, route, json === undefined ? {} : { json })
          assert.strictEqual(reply.status, 403, `${method} ${route}: ${reply.text}`)
          assert.strictEqual(reply.body.code, "organization_suspended")
        }
        const operations = (yield* api("GET", `/v1/machines/${busy}/operations?limit=100`)).body.items
        assert.isFalse(operations.some((op: any) =>
          ["restart", "exec"].includes(op.kind) && op.id !== exec.body.operation_id
        ))

        // Reads keep working; limits say suspended.
        assert.strictEqual((yield* api("GET", "/v1/machines")).body.items.length, 3)
        assert.strictEqual((yield* api("GET", `/v1/machines/${busy}`)).status, 200)
        assert.strictEqual((yield* api("GET", "/v1/limits")).body.status, "suspended")

        // Again: no change, the first suspension's reason and time.
        const again = yield* operator("POST", `${path}/suspend`, { json: { ...action, reason: "other reason" } })
        assert.strictEqual(again.status, 200)
        assert.deepStrictEqual(again.body, {
          ...suspended.body,
          already_suspended: true,
          machines_stopping: 0
        })

        // Stopping and deleting stay possible.
        const deleted = yield* api("DELETE", `/v1/machines/${other}`)
        assert.strictEqual(deleted.status, 202, deleted.text)

        const resumed = yield* operator("POST", `${path}/resume`, { json: { ...action, reason: "cleared" } })
        assert.deepStrictEqual(resumed.body, { organization_id: owner.organization_id, resumed: true })
        assert.strictEqual((yield* api("GET", `/v1/machines/${busy}`)).body.state, "stopped", "resume starts nothing")
        assert.strictEqual((yield* api("GET", "/v1/limits")).body.status, "active")
        const resumedAgain = yield* operator("POST", `${path}/resume`, { json: action })
        assert.deepStrictEqual(resumedAgain.body, { organization_id: owner.organization_id, resumed: false })
        const start = yield* api("POST", `/v1/machines/${busy}/start`)
        assert.strictEqual(start.status, 202, start.text)
        assert.strictEqual((yield* settled(api, start.body.operation_id)).status, "succeeded")
        assert.strictEqual((yield* sh(api, busy, "echo back")).exec_result.exit_code, 0)

        // One audit row per change, none for the repeats.
        const db = new Database(server.config.databaseFile, { readonly: true })
        const rows = db.prepare(
          "SELECT actor, actor_kind, action, organization_id, reason FROM audit_log WHERE action LIKE 'organization.%' ORDER BY at, id"
        )
          .all()
        db.close()
        assert.deepStrictEqual(rows, [
          {
            actor: action.operator,
            actor_kind: "operator",
            action: "organization.suspend",
            organization_id: owner.organization_id,
            reason: action.reason
          },
          {
            actor: action.operator,
            actor_kind: "operator",
            action: "organization.resume",
            organization_id: owner.organization_id,
            reason: "cleared"
          }
        ])
      }),
    120_000
  )
})
