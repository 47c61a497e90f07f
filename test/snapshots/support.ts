/** Helpers for snapshot tests over HTTP. */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { client } from "../support/Http.js"
import { eventually } from "../support/Machines.js"

/** Bytes under the snapshot store's chunks and manifests. */
export const storeBytes = (dataDir: string) => {
  let total = 0
  const add = (folder: string) => {
    if (!NodeFs.existsSync(folder)) return
    for (const entry of NodeFs.readdirSync(folder, { withFileTypes: true })) {
      const path = NodePath.join(folder, entry.name)
      if (entry.isDirectory()) add(path)
      else total += NodeFs.statSync(path).size
    }
  }
  add(NodePath.join(dataDir, "snapshots", "chunks"))
  add(NodePath.join(dataDir, "snapshots", "manifests"))
  return total
}

type Api = ReturnType<typeof client>

/** The snapshot once it left `pending`. */
export const snapshotSettled = (api: Api, id: string) =>
  eventually(
    Effect.map(api("GET", `/v1/snapshots/${id}`), (reply) =>
      reply.body?.status === "ready" || reply.body?.status === "failed" ? reply.body : undefined)
  )

/** Pushes a snapshot of the (stopped) machine and answers it once ready. */
export const pushed = (api: Api, machineId: string, body: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const accepted = yield* api("POST", `/v1/machines/${machineId}/snapshots`, { json: body })
    assert.strictEqual(accepted.status, 202, accepted.text)
    const snapshot = yield* snapshotSettled(api, accepted.body.snapshot_id)
    assert.strictEqual(snapshot.status, "ready", JSON.stringify(snapshot))
    return snapshot
  })
