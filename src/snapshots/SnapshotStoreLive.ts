/** The store of the data dir (`<data dir>/snapshots`), opened once per process. */
import { Context, Effect, Layer } from "effect"
import * as NodePath from "node:path"
import { AppConfig } from "../config/AppConfig.js"
import { SnapshotStore } from "./Store.js"

export class Store extends Context.Tag("svc/snapshots/Store")<Store, SnapshotStore>() {
  static readonly layer = Layer.effect(
    Store,
    Effect.flatMap(
      AppConfig,
      (config) => Effect.promise(() => new SnapshotStore(NodePath.join(config.dataDir, "snapshots")).open())
    )
  )
}
