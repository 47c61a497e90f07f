/**
 * The store of the data dir (`<data dir>/snapshots`), opened once per process. Opening empties
 * `tmp/` and collects what a crash left (chunks of a push that died before its manifest, which may
 * not be durable), before the runtime can re-apply any push that could take them as present.
 */
import { Context, Effect, Layer } from "effect"
import * as NodePath from "node:path"
import { AppConfig } from "../../kernel/config/AppConfig.js"
import { SnapshotsRepo } from "./SnapshotsRepo.js"
import { SnapshotStore } from "./Store.js"

export class Store extends Context.Tag("svc/snapshots/Store")<Store, SnapshotStore>() {
  static readonly layer = Layer.effect(
    Store,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const snapshots = yield* SnapshotsRepo
      const live = yield* snapshots.allIds
      return yield* Effect.promise(async () => {
        const store = await new SnapshotStore(NodePath.join(config.dataDir, "snapshots")).open()
        await store.collect(async () => live)
        return store
      })
    })
  )
}
