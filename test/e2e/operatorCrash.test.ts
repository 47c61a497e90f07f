/**
 * A suspension survives kill -9 at any instant after it was committed: `svc serve` is killed with
 * SIGKILL as soon as the suspension row is on disk (its machines' stops are still being accepted),
 * restarted on the same data dir, and converges: every machine stopped once with `stop_reason`
 * `suspension`, the organization suspended, one audit row (printed by `svc admin audit`).
 */
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Fiber } from "effect"
import type * as NodeChild from "node:child_process"
import * as NodePath from "node:path"
import { kill, nodeEnv, run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { eventually, realSleep, runningMachine } from "../support/Machines.js"

const token = "operator-token-for-crash-tests"
const count = 5

/** Blocks until the suspension row is readable (or 20 s pass), then kills svc in the same breath. */
const killOnceSuspended = (databaseFile: string, organizationId: string, child: NodeChild.ChildProcess) =>
  Effect.sync(() => {
    const db = new Database(databaseFile, { readonly: true, fileMustExist: true })
    const deadline = Date.now() + 20_000
    const suspended = db.prepare("SELECT 1 FROM organization_suspensions WHERE organization_id = ?")
    const stops = db.prepare("SELECT COUNT(*) AS n FROM operations WHERE kind = 'stop' AND stop_reason = 'suspension'")
    try {
      while (Date.now() < deadline) {
        if (suspended.get(organizationId) !== undefined) {
          child.kill("SIGKILL")
          return (stops.get() as { n: number }).n
        }
      }
      return -1
    } finally {
      db.close()
    }
  })

describe("suspension durability", () => {
  it.scopedLive("SIGKILL during a suspension converges after restart", () =>
    Effect.gen(function*() {
      const { dataDir, env, url } = yield* nodeEnv({ SVC_OPERATOR_TOKEN: token })
      const first = yield* serve(env)
      const boot = JSON.parse(
        (yield* run(["admin", "bootstrap", "--email", "ops@example.com", "--data-dir", dataDir])).stdout
      )
      const api = client(url, { key: boot.api_key })
      const operator = client(url, { headers: { "x-svc-operator-token": token } })
      const ids = yield* Effect.all(
        Array.from({ length: count }, (_, index) => runningMachine(api, `m${index}`, { size: "small" })),
        { concurrency: 2 }
      )

      const request = yield* Effect.fork(Effect.exit(operator(
        "POST",
        `/v1/operator/organizations/${boot.organization_id}/suspend`,
        { json: { operator: "ops", reason: "kill -9 test" } }
      )))
      yield* realSleep(1) // the request leaves before the test blocks on the database
      const stopsAtKill = yield* killOnceSuspended(NodePath.join(dataDir, "svc.db"), boot.organization_id, first)
      yield* kill(first)
      yield* Fiber.join(request)
      assert.isAtLeast(stopsAtKill, 0, "the suspension was committed")
      assert.isBelow(stopsAtKill, count, "the kill came before every stop was accepted")

      yield* serve(env)
      for (const id of ids) {
        const machine = yield* eventually(
          Effect.map(api("GET", `/v1/machines/${id}`), (reply) =>
            reply.body?.state === "stopped" ? reply.body : undefined),
          60_000
        )
        assert.strictEqual(machine.last_stop_reason, "suspension")
        const stops = (yield* api("GET", `/v1/machines/${id}/operations?limit=100`)).body.items.filter(
          (operation: any) =>
            operation.kind === "stop"
        )
        assert.strictEqual(stops.length, 1, "one stop per boot, also across the restart")
      }
      assert.strictEqual((yield* api("GET", "/v1/limits")).body.status, "suspended")
      const refused = yield* api("POST", `/v1/machines/${ids[0]}/start`)
      assert.strictEqual(refused.body.code, "organization_suspended")

      const audit = yield* run([
        "admin",
        "audit",
        "--json",
        "--org",
        boot.organization_id,
        "--action",
        "organization",
        "--data-dir",
        dataDir
      ])
      assert.strictEqual(audit.code, 0, audit.stderr)
      const rows = JSON.parse(audit.stdout)
      assert.deepStrictEqual(
        rows.map((row: any) => [row.actor, row.actor_kind, row.action, row.organization_id, row.reason]),
        [["ops", "operator", "organization.suspend", boot.organization_id, "kill -9 test"]]
      )
      const text = yield* run(["admin", "audit", "--action", "organization", "--data-dir", dataDir])
      assert.match(text.stdout, /operator:ops {2}organization\.suspend {2}[0-9a-f-]{36} {2}"kill -9 test"/)
      console.log(`suspension kill -9: ${stopsAtKill} of ${count} stops accepted at the kill`)
    }), 240_000)
})
