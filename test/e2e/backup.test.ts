/**
 * `svc admin backup` while svc serves, and `svc admin restore` into a fresh data dir: the restored
 * service has the same users, keys, machines' records and snapshots, and a machine restored from a
 * snapshot holds the file written before the backup. A second backup into the same folder copies
 * no chunk again; restore refuses a data dir in use or one that has a database (without --force).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { pushed } from "../snapshots/support.js"
import { destroyMachines, run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { change, decode, runningMachine, settled, sh } from "../support/Machines.js"
import { freePort, tempDir } from "../support/TestServer.js"

const served = (dataDir: string) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const env = { SVC_DATA_DIR: dataDir, SVC_PORT: String(port), SVC_RUNTIME: "sandbox", SVC_BILLING: "unlimited" }
    const child = yield* serve(env)
    return { child, url: `http://127.0.0.1:${port}` }
  })

describe("backup and restore", () => {
  it.scopedLive("a live backup restores into a fresh data dir with its snapshots", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const restoredDir = yield* tempDir
      const backupDir = NodePath.join(yield* tempDir, "backup")
      yield* Effect.addFinalizer(() =>
        Effect.zipRight(destroyMachines(dataDir, "sandbox"), destroyMachines(restoredDir, "sandbox"))
      )
      const first = yield* served(dataDir)
      const boot = yield* run(["admin", "bootstrap", "--email", "backup@example.com", "--data-dir", dataDir])
      const key = JSON.parse(boot.stdout).api_key
      const api = client(first.url, { key })
      const id = yield* runningMachine(api, "kept")
      const wrote = yield* sh(
        api,
        id,
        "echo before-backup > /workspace/kept.txt && head -c 2500000 /dev/urandom > /workspace/r.bin"
      )
      assert.strictEqual(wrote.exec_result.exit_code, 0)
      yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
      const snapshot = yield* pushed(api, id)

      const taken = yield* run(["admin", "backup", backupDir, "--data-dir", dataDir])
      assert.strictEqual(taken.code, 0, taken.stderr)
      const summary = JSON.parse(taken.stdout)
      assert.strictEqual(summary.snapshots, 1)
      const chunkFiles = NodeFs.readdirSync(NodePath.join(backupDir, "snapshots", "chunks"), { recursive: true })
        .filter((name) => /[0-9a-f]{64}$/.test(String(name)))
      assert.isAbove(summary.chunks_copied, 0)
      assert.strictEqual(chunkFiles.length, summary.chunks_copied)
      assert.deepStrictEqual(summary.snapshots_missing, [])
      const again = JSON.parse((yield* run(["admin", "backup", backupDir, "--data-dir", dataDir])).stdout)
      assert.deepStrictEqual([again.chunks_copied, again.chunks_already_there], [0, summary.chunks_copied])

      // Restore refuses a data dir that a server holds, and one with a database, unless forced.
      const busy = yield* run(["admin", "restore", backupDir, "--data-dir", dataDir, "--force"])
      assert.strictEqual(busy.code, 1)
      assert.match(busy.stderr, /^svc: the data dir .* is in use by another svc process/)
      assert.notInclude(busy.stderr, "svc: svc:")
      const existing = yield* run(["admin", "restore", backupDir, "--data-dir", dataDir])
      assert.strictEqual(existing.code, 1)
      assert.include(existing.stderr, "--force")

      const restored = yield* run(["admin", "restore", backupDir, "--data-dir", restoredDir])
      assert.strictEqual(restored.code, 0, restored.stderr)
      const second = yield* served(restoredDir)
      const api2 = client(second.url, { key })
      const machine = yield* api2("GET", `/v1/machines/${id}`)
      assert.strictEqual(machine.status, 200, "the key and the machine's record came back")
      assert.strictEqual((yield* api2("GET", `/v1/snapshots/${snapshot.id}`)).body.status, "ready")
      const made = yield* api2("POST", `/v1/machines/${id}/restore`, { json: { name: "from-backup" } })
      assert.strictEqual(made.status, 202, made.text)
      assert.strictEqual((yield* settled(api2, made.body.operation_id, 60_000)).status, "succeeded")
      const read = yield* sh(api2, made.body.machine_id, "cat /workspace/kept.txt")
      assert.strictEqual(decode(read.exec_result.stdout_base64).trim(), "before-backup")
      assert.isFalse(NodeFs.existsSync(NodePath.join(backupDir, "svc.db-wal")))
    }), 600_000)
})
