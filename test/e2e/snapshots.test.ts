/**
 * Snapshots end to end (api.md "Snapshots and templates"): the real server on a loopback port,
 * real sandboxes, real SQLite, the store on the data dir. States, every error code of the routes,
 * dedup proven by `uploaded_bytes` and garbage collection by the store's size on disk.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { pushed, snapshotSettled, storeBytes } from "../snapshots/support.js"
import { client } from "../support/Http.js"
import { change, eventually, readEvents, runningMachine, settled, sh } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const setup = (snapshots = { perMachine: 50, templatesPerOrganization: 100 }) =>
  Effect.gen(function*() {
    const server = yield* startServer({ runtime: "sandbox", snapshots })
    const owner = yield* server.bootstrap("owner@example.com")
    return { server, api: client(server.url, { key: owner.api_key }) }
  })

describe("snapshots", () => {
  it.scopedLive("push, list, latest, get; a second push stores only what changed; progress events", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup()
      const id = yield* runningMachine(api, "snap")
      yield* sh(api, id, "head -c 3000000 /dev/urandom > /root/big.bin && echo hello > /workspace/a.txt")

      const running = yield* api("POST", `/v1/machines/${id}/snapshots`, { json: {} })
      assert.strictEqual(running.status, 409)
      assert.strictEqual(running.body.code, "machine_not_stopped")
      yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
      const none = yield* api("GET", `/v1/machines/${id}/snapshots/latest`)
      assert.deepStrictEqual([none.status, none.body.code], [404, "no_snapshot"])

      const accepted = yield* api("POST", `/v1/machines/${id}/snapshots`, {
        json: {},
        headers: { "idempotency-key": "push-1" }
      })
      assert.strictEqual(accepted.status, 202)
      assert.strictEqual(accepted.body.machine_id, id)
      assert.strictEqual(accepted.body.status, "pending")
      assert.strictEqual(accepted.body.operation_url, `${server.url}/v1/operations/${accepted.body.operation_id}`)
      assert.strictEqual(accepted.body.snapshot_url, `${server.url}/v1/snapshots/${accepted.body.snapshot_id}`)
      const operation = yield* settled(api, accepted.body.operation_id)
      assert.strictEqual(operation.kind, "snapshot")
      assert.strictEqual(operation.status, "succeeded")
      const first = (yield* api("GET", `/v1/snapshots/${accepted.body.snapshot_id}`)).body
      assert.strictEqual(first.status, "ready", "ready as soon as its operation succeeded")
      assert.include(first, {
        machine_id: id,
        tier: "warm",
        source: "api",
        generation: 1,
        disk_synced: true,
        name: null
      })
      assert.isAtLeast(first.size_bytes, 3_000_000)
      assert.strictEqual(first.uploaded_bytes, first.size_bytes, "nothing was stored before")
      assert.match(first.manifest, /^sha256:[0-9a-f]{64}$/)
      assert.isNull(first.parent_manifest)
      assert.isNotNull(first.completed_at)

      // The same key and body answers the same snapshot; another body with it is a conflict.
      const again = yield* api("POST", `/v1/machines/${id}/snapshots`, {
        json: { tier: null },
        headers: { "idempotency-key": "push-1" }
      })
      assert.strictEqual(again.status, 202)
      assert.strictEqual(again.body.snapshot_id, accepted.body.snapshot_id)
      const conflict = yield* api("POST", `/v1/machines/${id}/snapshots`, {
        json: { tier: "cold" },
        headers: { "idempotency-key": "push-1" }
      })
      assert.deepStrictEqual([conflict.status, conflict.body.code], [409, "idempotency_conflict"])

      const events = yield* readEvents(`${server.url}/v1/operations/${accepted.body.operation_id}/events`, {
        authorization: `Bearer ${(yield* server.bootstrap("owner@example.com")).api_key}`
      })
      const progress = events.events.filter((event) => event.event === "progress")
      assert.isAbove(progress.length, 0)
      assert.deepStrictEqual(progress[progress.length - 1]!.data, {
        done_bytes: first.size_bytes,
        total_bytes: first.size_bytes
      })

      // Change a small file only: the second push stores that, not the 3 MB again.
      yield* change(api, "POST", `/v1/machines/${id}/start`, {})
      yield* sh(api, id, "echo changed >> /workspace/a.txt")
      yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
      const second = yield* pushed(api, id)
      assert.strictEqual(second.generation, 2)
      assert.strictEqual(second.parent_manifest, first.manifest)
      assert.isBelow(second.uploaded_bytes, 64 * 1024, "only the files that changed")
      assert.isAtLeast(second.size_bytes, 3_000_000)

      const list = (yield* api("GET", `/v1/machines/${id}/snapshots`)).body
      assert.deepStrictEqual(list.items.map((s: any) => s.id), [first.id, second.id])
      assert.isNull(list.next_cursor)
      const page = (yield* api("GET", `/v1/machines/${id}/snapshots?limit=1`)).body
      assert.deepStrictEqual([page.items.length, page.next_cursor], [1, first.id])
      const rest = (yield* api("GET", `/v1/machines/${id}/snapshots?limit=1&cursor=${first.id}`)).body
      assert.deepStrictEqual(rest.items.map((s: any) => s.id), [second.id])
      const latest = (yield* api("GET", `/v1/machines/${id}/snapshots/latest`)).body
      assert.deepStrictEqual(Object.keys(latest).sort(), [
        "completed_at",
        "created_at",
        "id",
        "size_bytes",
        "source",
        "tier"
      ])
      assert.strictEqual(latest.id, second.id)
      assert.deepStrictEqual((yield* api("GET", `/v1/machines/${id}/snapshots?limit=0`)).status, 422)
      const unknown = "0190f5d4-0000-7000-8000-000000000000"
      assert.strictEqual((yield* api("GET", `/v1/snapshots/${unknown}`)).status, 404)
      assert.strictEqual((yield* api("GET", `/v1/machines/${unknown}/snapshots`)).status, 404)
      assert.strictEqual(
        (yield* api("GET", `/v1/machines/${unknown}/snapshots/latest`)).body.code,
        "resource_not_found"
      )
      assert.isAbove(storeBytes(server.config.dataDir), 3_000_000)

      // A read-only key reads snapshots but may not push or delete them.
      const made = yield* api("POST", "/v1/api-keys", { json: { name: "reader", preset: "read_only" } })
      assert.strictEqual(made.status, 201, made.text)
      const reader = client(server.url, { key: made.body.secret })
      assert.strictEqual((yield* reader("GET", `/v1/snapshots/${second.id}`)).status, 200)
      const denied = yield* reader("POST", `/v1/machines/${id}/snapshots`, { json: {} })
      assert.deepStrictEqual([denied.status, denied.body.code], [403, "insufficient_scope"])
      assert.strictEqual((yield* reader("DELETE", `/v1/snapshots/${second.id}`)).status, 403)
      assert.strictEqual((yield* client(server.url)("GET", `/v1/snapshots/${second.id}`)).status, 401)
    }))

  it.scopedLive("delete, bulk delete and delete by source; pending pushes are kept; the store is collected", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup({ perMachine: 3, templatesPerOrganization: 100 })
      const id = yield* runningMachine(api, "deletes")
      yield* sh(api, id, "head -c 2000000 /dev/urandom > /root/one.bin")
      yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
      const first = yield* pushed(api, id)
      const sizeOne = storeBytes(server.config.dataDir)
      yield* change(api, "POST", `/v1/machines/${id}/start`, {})
      yield* sh(api, id, "head -c 2000000 /dev/urandom > /root/two.bin")
      yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
      const second = yield* pushed(api, id)
      assert.isAbove(storeBytes(server.config.dataDir), sizeOne + 1_900_000)

      // A push queued behind a slow exec stays pending meanwhile.
      yield* change(api, "POST", `/v1/machines/${id}/start`, {})
      const slow = yield* api("POST", `/v1/machines/${id}/exec`, { json: { shell: "sleep 3" } })
      assert.strictEqual(slow.status, 202)
      assert.strictEqual((yield* api("POST", `/v1/machines/${id}/stop`, { json: {} })).status, 202)
      const pending = yield* api("POST", `/v1/machines/${id}/snapshots`, { json: {} })
      assert.strictEqual(pending.status, 202)
      const pendingId = pending.body.snapshot_id
      assert.strictEqual((yield* api("GET", `/v1/snapshots/${pendingId}`)).body.status, "pending")
      const limited = yield* api("POST", `/v1/machines/${id}/snapshots`, { json: {} })
      assert.deepStrictEqual([limited.status, limited.body.code], [409, "snapshot_limit_reached"])
      const refused = yield* api("DELETE", `/v1/snapshots/${pendingId}`)
      assert.deepStrictEqual([refused.status, refused.body.code], [409, "snapshot_pending"])

      const unknown = "0190f5d4-0000-7000-8000-000000000000"
      const bulk = yield* api("POST", "/v1/snapshots/bulk-delete", {
        json: { snapshot_ids: [first.id, first.id.toUpperCase(), unknown, pendingId] }
      })
      assert.strictEqual(bulk.status, 200)
      assert.deepStrictEqual(bulk.body, {
        deleted: 1,
        results: [
          { snapshot_id: first.id, result: "deleted" },
          { snapshot_id: unknown, result: "not_found" },
          { snapshot_id: pendingId, result: "pending" }
        ]
      })
      assert.strictEqual((yield* api("GET", `/v1/snapshots/${first.id}`)).status, 404, "gone from the product at once")
      for (const body of [{ snapshot_ids: [] }, { snapshot_ids: Array.from({ length: 101 }, () => unknown) }, {}]) {
        assert.strictEqual((yield* api("POST", "/v1/snapshots/bulk-delete", { json: body })).status, 422)
      }
      // Only what the first snapshot alone held is freed: the second names every other chunk.
      const afterBulk = yield* eventually(Effect.sync(() => {
        const size = storeBytes(server.config.dataDir)
        return size < sizeOne + 2_100_000 ? size : undefined
      }))
      assert.isAbove(afterBulk, 3_900_000, "two.bin and one.bin are both still named by the second snapshot")

      // The one lookup is the organization's: another organization's bulk delete finds nothing.
      const stranger = client(server.url, { key: (yield* server.bootstrap("stranger@example.com")).api_key })
      const foreign = yield* stranger("POST", "/v1/snapshots/bulk-delete", { json: { snapshot_ids: [second.id] } })
      assert.deepStrictEqual(foreign.body, { deleted: 0, results: [{ snapshot_id: second.id, result: "not_found" }] })

      const third = yield* snapshotSettled(api, pendingId)
      assert.strictEqual(third.status, "ready")
      const byMachine = yield* api("DELETE", `/v1/machines/${id}/snapshots?source=automatic`)
      assert.deepStrictEqual(byMachine.body, { deleted: 0, results: [] })
      const all = yield* api("DELETE", `/v1/machines/${id}/snapshots`)
      assert.deepStrictEqual(all.body, {
        deleted: 2,
        results: [{ snapshot_id: second.id, result: "deleted" }, { snapshot_id: pendingId, result: "deleted" }]
      })
      assert.strictEqual((yield* api("DELETE", `/v1/snapshots/${second.id}`)).status, 404)
      // Nothing names any chunk now: the store is empty again.
      yield* eventually(Effect.sync(() => storeBytes(server.config.dataDir) === 0 ? true : undefined))
      assert.strictEqual((yield* api("DELETE", `/v1/machines/${unknown}/snapshots`)).status, 404)

      // A push that cannot read the disk fails (error_code snapshot_failed); latest skips it; it can be deleted.
      const broken = (yield* api("POST", "/v1/machines", { json: { name: "no-disk", start: false } })).body
      assert.strictEqual((yield* settled(api, broken.operation_id)).status, "succeeded")
      const brokenDisk = NodePath.join(server.config.dataDir, "machines", broken.machine_id, "disk")
      // The sandbox's disk is a mounted image (docs/drivers.md "Disk"): unmounted so that its folder can go.
      NodeChild.spawnSync("umount", [brokenDisk])
      NodeFs.rmSync(brokenDisk, { recursive: true })
      const doomed = yield* api("POST", `/v1/machines/${broken.machine_id}/snapshots`, { json: {} })
      const failedOperation = yield* settled(api, doomed.body.operation_id)
      assert.deepStrictEqual([failedOperation.status, failedOperation.error_code], ["failed", "snapshot_failed"])
      const failed = (yield* api("GET", `/v1/snapshots/${doomed.body.snapshot_id}`)).body
      assert.deepStrictEqual([failed.status, failed.error_code, failed.manifest], ["failed", "snapshot_failed", null])
      assert.strictEqual(
        (yield* api("GET", `/v1/machines/${broken.machine_id}/snapshots/latest`)).body.code,
        "no_snapshot"
      )
      assert.strictEqual((yield* api("DELETE", `/v1/snapshots/${failed.id}`)).status, 204)

      // A settled single delete answers 204.
      const fourth = yield* pushed(api, id)
      assert.strictEqual((yield* api("DELETE", `/v1/snapshots/${fourth.id}`)).status, 204)
      assert.strictEqual((yield* api("GET", `/v1/machines/${id}/snapshots/latest`)).body.code, "no_snapshot")
    }))

  it.scoped("automatic snapshots: taken when auto_stop stops the machine, the newest N kept", () =>
    Effect.gen(function*() {
      const { api } = yield* setup()
      const id = yield* runningMachine(api, "auto", { auto_stop_seconds: 60 })
      const off = (yield* api("GET", `/v1/machines/${id}`)).body
      assert.isNull(off.auto_snapshot_keep)
      const set = yield* api("PATCH", `/v1/machines/${id}`, { json: { auto_snapshot_keep: 2 } })
      assert.strictEqual(set.body.auto_snapshot_keep, 2)
      assert.strictEqual((yield* api("PATCH", `/v1/machines/${id}`, { json: { auto_snapshot_keep: 0 } })).status, 422)

      // A stop through the API takes none.
      yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
      const automaticOnes = Effect.map(
        api("GET", `/v1/machines/${id}/snapshots`),
        (reply) => (reply.body.items as Array<any>).filter((s) => s.source === "automatic")
      )
      const taken: Array<string> = []
      for (let round = 1; round <= 3; round++) {
        yield* change(api, "POST", `/v1/machines/${id}/start`, {})
        yield* sh(api, id, `echo round ${round} > /workspace/round`)
        yield* TestClock.adjust("61 seconds")
        const ready = yield* eventually(Effect.map(automaticOnes, (items) => {
          const newest = items[items.length - 1]
          return newest !== undefined && !taken.includes(newest.id) && newest.status === "ready" ? items : undefined
        }))
        taken.push(ready[ready.length - 1].id)
      }
      // The oldest of the three went once the third was ready: two kept, newest last.
      const kept = yield* eventually(Effect.map(automaticOnes, (items) => items.length === 2 ? items : undefined))
      assert.deepStrictEqual(kept.map((s: any) => s.id), taken.slice(1))
      assert.strictEqual((yield* api("GET", `/v1/machines/${id}/snapshots`)).body.items.length, 2, "no api snapshots")
      const latest = (yield* api("GET", `/v1/machines/${id}/snapshots/latest`)).body
      assert.deepStrictEqual([latest.id, latest.source], [taken[2], "automatic"])
      const deleted = yield* api("DELETE", `/v1/machines/${id}/snapshots?source=automatic`)
      assert.strictEqual(deleted.body.deleted, 2)
    }))
})
