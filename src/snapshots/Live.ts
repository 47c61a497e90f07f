/** The snapshots area: snapshots and templates as the product shows them, over the kernel's store. */
import { Snapshots } from "./Snapshots.js"

export const SnapshotsLive = Snapshots.layer
