/**
 * The audit log records every machine lifecycle change with its actor (create, change, start,
 * stop, delete), in the accept's own transaction, and `svc admin audit` (spawned for real beside a
 * running server) narrows it by machine, action, actor and time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { type AuditFilter, AuditLog } from "../../src/kernel/AuditLog.js"
import { run } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { settled } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

describe("machine lifecycle audit", () => {
  it.scopedLive("every change is recorded with who asked, and the CLI filters it", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* server.bootstrap("audit@example.com")
      const api = client(server.url, { key: owner.api_key })
      const created = yield* api("POST", "/v1/machines", { json: { name: "audited", start: false } })
      assert.strictEqual(created.status, 202, created.text)
      const id: string = created.body.machine_id
      yield* settled(api, created.body.operation_id)
      const other = yield* api("POST", "/v1/machines", { json: { name: "other", start: false } })
      yield* settled(api, other.body.operation_id)
      assert.strictEqual((yield* api("PATCH", `/v1/machines/${id}`, { json: { name: "renamed" } })).status, 200)
      yield* settled(api, (yield* api("POST", `/v1/machines/${id}/start`)).body.operation_id)
      yield* settled(api, (yield* api("POST", `/v1/machines/${id}/stop`, { json: { force: true } })).body.operation_id)
      yield* settled(api, (yield* api("DELETE", `/v1/machines/${id}`)).body.operation_id)
      const userId: string = (yield* api("GET", `/v1/machines/${id}`)).body.created_by

      const audit = (...args: Array<string>) =>
        Effect.map(run(["admin", "audit", "--json", "--data-dir", server.config.dataDir, ...args]), (done) => {
          assert.strictEqual(done.code, 0, done.stderr)
          return JSON.parse(done.stdout) as Array<any>
        })
      const rows = yield* audit("--machine", id)
      assert.deepStrictEqual(rows.map((row) => row.action), [
        "machine.create",
        "machine.change",
        "machine.start",
        "machine.stop",
        "machine.delete"
      ])
      for (const row of rows) {
        assert.strictEqual(row.actor, userId)
        assert.strictEqual(row.actor_kind, "user")
        assert.strictEqual(row.detail.machine_id, id)
      }
      assert.strictEqual(rows[0].detail.operation_id, created.body.operation_id)
      assert.deepStrictEqual(rows[1].detail.changed, { name: "renamed" })
      assert.strictEqual(rows[3].detail.force, true)

      assert.deepStrictEqual(
        (yield* audit("--action", "machine.stop", "--since", "1d")).map((r) => r.detail.machine_id),
        [
          id
        ]
      )
      // The other filters, through the same query in process (each spawn of the CLI costs seconds).
      const log = Context.get(server.context, AuditLog)
      const list = (filter: AuditFilter) => Effect.map(log.list({ ...filter, limit: 100 }), (found) => found.length)
      assert.strictEqual(yield* list({ action: "machine" }), 6, "every machine.* row of both machines")
      assert.strictEqual(yield* list({ action: "machin" }), 0, "a prefix is a whole dotted part")
      assert.strictEqual(yield* list({ actor: "someone-else" }), 0)
      assert.strictEqual(yield* list({ actor: userId, organizationId: rows[0].organization_id }), 6)
      assert.strictEqual(yield* list({ since: Date.parse("2999-01-01T00:00:00Z") }), 0)
      const bad = yield* run(["admin", "audit", "--since", "yesterday", "--data-dir", server.config.dataDir])
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, "--since")
    }), { timeout: 240_000 })
})
