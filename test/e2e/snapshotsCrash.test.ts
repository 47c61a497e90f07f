/**
 * A crash in the middle of a push: `svc serve` is killed with SIGKILL while the push writes chunks,
 * restarted on the same data dir, and the push is finished on recovery: the operation settles,
 * the snapshot is ready, every chunk the store holds is named by a manifest and holds the bytes of
 * its name, nothing is left in tmp/, and a restore of the snapshot holds what the machine held.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { chunkKey, chunkKeysOf } from "../../src/snapshots/store/ChunkStore.js"
import type { Manifest } from "../../src/snapshots/store/Manifest.js"
import { walk } from "../../src/snapshots/store/Tree.js"
import { snapshotSettled } from "../snapshots/support.js"
import { kill, serve, servedSandbox } from "../support/Binary.js"
import { change, eventually, runningMachine, settled, sh } from "../support/Machines.js"

const chunkFiles = (root: string) => {
  const found: Array<string> = []
  const folder = NodePath.join(root, "chunks", "warm")
  if (!NodeFs.existsSync(folder)) return found
  for (const prefix of NodeFs.readdirSync(folder)) {
    for (const hash of NodeFs.readdirSync(NodePath.join(folder, prefix))) found.push(hash)
  }
  return found
}

const treeOf = (root: string) =>
  Effect.promise(async () =>
    (await walk(root)).map(({ identity: _identity, mtime: _mtime, ...entry }) => ({
      ...entry,
      sha: entry.type === "file"
        ? NodeCrypto.createHash("sha256").update(NodeFs.readFileSync(NodePath.join(root, entry.path))).digest("hex")
        : undefined
    }))
  )

describe("snapshot crash safety", () => {
  it.scopedLive(
    "SIGKILL in the middle of a push: after a restart the push is finished and the store is consistent",
    () =>
      Effect.gen(function*() {
        const { api, dataDir, env, first } = yield* servedSandbox
        const id = yield* runningMachine(api, "crash")
        // About 160 MB in large files and 2,000 small ones: a push long enough to be killed in.
        yield* sh(
          api,
          id,
          "for i in 1 2 3 4; do head -c 40000000 /dev/urandom > /root/big$i.bin; done && " +
            "mkdir -p /workspace/many && for i in $(seq 1 2000); do echo small $i > /workspace/many/f$i; done",
          {
            timeout_seconds: 600
          }
        )
        yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
        const accepted = yield* api("POST", `/v1/machines/${id}/snapshots`, { json: {} })
        assert.strictEqual(accepted.status, 202)
        const snapshotId = accepted.body.snapshot_id
        const store = NodePath.join(dataDir, "snapshots")
        // Killed once some chunks are written and before the manifest exists.
        yield* eventually(Effect.sync(() => chunkFiles(store).length >= 20 ? true : undefined), 60_000)
        yield* kill(first)
        assert.isFalse(NodeFs.existsSync(NodePath.join(store, "manifests", `${snapshotId}.json`)), "killed mid-push")

        yield* serve(env)
        const operation = yield* settled(api, accepted.body.operation_id, 120_000)
        assert.strictEqual(operation.status, "succeeded")
        assert.isAbove(operation.attempt_count, 1, "re-applied after the crash")
        const snapshot = yield* snapshotSettled(api, snapshotId)
        assert.strictEqual(snapshot.status, "ready")
        assert.isAbove(snapshot.size_bytes, 160_000_000)

        // The store holds exactly the chunks the manifest names, each with the bytes of its name.
        const manifest = JSON.parse(
          NodeFs.readFileSync(NodePath.join(store, "manifests", `${snapshotId}.json`), "utf8")
        ) as Manifest
        const hashes = new Set(manifest.entries.flatMap((entry) => entry.chunks ?? []))
        const named = chunkKeysOf(manifest)
        assert.strictEqual(named.size, hashes.size)
        yield* eventually(Effect.sync(() => chunkFiles(store).length === named.size ? true : undefined), 30_000)
        assert.deepStrictEqual(new Set(chunkFiles(store)), named)
        for (const hash of hashes) {
          const key = chunkKey(manifest.chunk_scope, hash)
          const bytes = NodeFs.readFileSync(NodePath.join(store, "chunks", "warm", key.slice(0, 2), key))
          assert.strictEqual(NodeCrypto.createHash("sha256").update(bytes).digest("hex"), hash)
        }
        assert.deepStrictEqual(NodeFs.readdirSync(NodePath.join(store, "tmp")), [])

        const restored = yield* api("POST", `/v1/machines/${id}/restore`, {
          json: { name: "after-crash", start: false }
        })
        assert.strictEqual(restored.status, 202)
        assert.strictEqual((yield* settled(api, restored.body.operation_id, 120_000)).status, "succeeded")
        assert.deepStrictEqual(
          yield* treeOf(NodePath.join(dataDir, "machines", restored.body.machine_id, "disk")),
          yield* treeOf(NodePath.join(dataDir, "machines", id, "disk"))
        )
      }),
    { timeout: 300_000 }
  )
})
