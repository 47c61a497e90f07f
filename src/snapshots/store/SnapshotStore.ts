/**
 * The store of the data dir (`<data dir>/snapshots`), opened once per process. Opening empties
 * `tmp/` and collects what a crash left (chunks of a push that died before its manifest, which may
 * not be durable), before the runtime can re-apply any push that could take them as present.
 */
import { Context, Effect, Layer } from "effect"
import * as NodePath from "node:path"
import { AppConfig } from "../../kernel/config/AppConfig.js"
import { ChunkStore } from "./ChunkStore.js"
import { SnapshotsRepo } from "./SnapshotsRepo.js"

export class SnapshotStore extends Context.Tag("svc/snapshots/SnapshotStore")<SnapshotStore, ChunkStore>() {
  static readonly layer = Layer.effect(
    SnapshotStore,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const snapshots = yield* SnapshotsRepo
      const live = yield* snapshots.allIds
      return yield* Effect.promise(async () => {
        const store = await new ChunkStore(NodePath.join(config.dataDir, "snapshots")).open()
        await store.collect(async () => live)
        return store
      })
    })
  )
}
