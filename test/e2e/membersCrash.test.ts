/**
 * Deleting an organization across kill -9: `svc serve` (a separate process) is killed while the
 * delete is being answered, and once more right after a deletion's commit (its state made by hand:
 * the organization marked deleted, its members gone, its machines still running). After a restart
 * the organization is either untouched (then a new delete works) or deleted with every machine
 * stopped `organization_deleted`: never deleted with machines left running.
 */
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { kill, nodeEnv, run, serve } from "../support/Binary.js"
import { client, CookieJar, request } from "../support/Http.js"
import { eventually, realSleep, runningMachine } from "../support/Machines.js"
import { codeFrom } from "../support/SignIn.js"

/** The machines of `organizationId` and whether each was stopped for its deletion. */
const machinesOf = (databaseFile: string, organizationId: string) => {
  const db = new Database(databaseFile, { readonly: true })
  const rows = db.prepare(
    `SELECT m.id, m.state, (SELECT o.status FROM operations o WHERE o.machine_id = m.id AND o.kind = 'stop'
      AND o.stop_reason = 'organization_deleted') AS stop FROM machines m WHERE m.organization_id = ?`
  ).all(organizationId) as Array<{ id: string; state: string; stop: string | null }>
  db.close()
  return rows
}

const deletedAt = (databaseFile: string, organizationId: string) => {
  const db = new Database(databaseFile, { readonly: true })
  const row = db.prepare("SELECT deleted_at FROM organizations WHERE id = ?").get(organizationId) as {
    deleted_at: number | null
  }
  db.close()
  return row.deleted_at
}

describe("organization deletion across kill -9", () => {
  it.scopedLive("a deleted organization's machines all stop, whenever the process died", () =>
    Effect.gen(function*() {
      const { dataDir, env, url: base } = yield* nodeEnv()
      const databaseFile = NodePath.join(dataDir, "svc.db")
      const first = yield* serve(env)
      const bootstrap = (email: string) =>
        Effect.map(
          run(["admin", "bootstrap", "--email", email, "--data-dir", dataDir], env),
          (done) => JSON.parse(done.stdout) as { organization_id: string; api_key: string }
        )
      const raced = yield* bootstrap("raced@example.com")
      const committed = yield* bootstrap("committed@example.com")
      const racedKey = client(base, { key: raced.api_key })
      for (const name of ["r1", "r2", "r3"]) yield* runningMachine(racedKey, name)
      yield* runningMachine(client(base, { key: committed.api_key }), "c1")

      // A session of the raced organization's owner, signed in by the code mailed to the outbox.
      const jar = new CookieJar()
      const browser = client(base, { jar })
      yield* browser("POST", "/v1/auth/email/start", { json: { email: "raced@example.com" } })
      const outbox = NodePath.join(dataDir, "outbox")
      const code = codeFrom(
        JSON.parse(NodeFs.readFileSync(NodePath.join(outbox, NodeFs.readdirSync(outbox).sort().at(-1)!), "utf8")).text
      )
      assert.strictEqual(
        (yield* browser("POST", "/v1/auth/email/verify", { json: { email: "raced@example.com", code } })).status,
        200
      )
      const remove = () =>
        browser("DELETE", `/v1/organizations/${raced.organization_id}`, {
          headers: { "x-csrf-token": jar.get("svc_csrf")!, "x-organization-id": raced.organization_id }
        })

      // The delete is sent and the process killed a moment later: before, during or after its commit.
      yield* Effect.fork(Effect.exit(remove()))
      yield* realSleep(Math.floor(Math.random() * 20))
      yield* kill(first)
      // The state a crash right after a deletion's commit leaves, for the other organization.
      const db = new Database(databaseFile)
      db.prepare("UPDATE organizations SET deleted_at = ? WHERE id = ?").run(Date.now(), committed.organization_id)
      db.prepare("DELETE FROM memberships WHERE organization_id = ?").run(committed.organization_id)
      db.close()

      yield* serve(env)
      const racedDeleted = deletedAt(databaseFile, raced.organization_id) !== null
      console.log(`the raced delete ${racedDeleted ? "was" : "was not"} committed before the kill`)
      if (!racedDeleted) {
        // Untouched: the key still works, and the delete can be made now.
        assert.strictEqual((yield* racedKey("GET", "/v1/me")).status, 200)
        assert.strictEqual((yield* remove()).status, 200)
      }
      assert.strictEqual(
        (yield* request(base, "GET", "/v1/me", { headers: { authorization: `Bearer ${raced.api_key}` } })).body.code,
        "invalid_api_key"
      )
      for (const organizationId of [raced.organization_id, committed.organization_id]) {
        const machines = yield* eventually(
          Effect.sync(() => {
            const rows = machinesOf(databaseFile, organizationId)
            return rows.every((row) => row.state === "stopped" && row.stop === "succeeded") ? rows : undefined
          }),
          60_000
        )
        assert.isNotEmpty(machines)
      }
    }), 180_000)
})
