/**
 * What an isolated boot asks of the spawner (docs/drivers.md "Isolation"): the machine's own uid
 * range, its disk to idmap, the host folders it sees read-only, the secrets masked, and what bwrap
 * reads from descriptors (the machine's resolv.conf, the seccomp program).
 */
import * as NodeFs from "node:fs"
import { maskedFiles, readOnlyFolders, stage } from "./Bwrap.js"
import * as Seccomp from "./Seccomp.js"
import type { Isolation } from "./Spawner.js"
import * as UidRanges from "./UidRanges.js"

/** The seccomp program as the launcher takes it (its first argument). */
export const seccompHex = Buffer.from(Seccomp.program()).toString("hex")

export const isolationOf = (
  options: {
    readonly dataDir: string
    readonly id: string
    readonly diskDir: string
    readonly toolsDir: string | undefined
    readonly resolvConf: string
  }
): Isolation => ({
  uidBase: UidRanges.uidBaseOf(options.dataDir, options.id),
  diskDir: options.diskDir,
  stage,
  toolsDir: options.toolsDir,
  readOnly: readOnlyFolders(),
  masked: maskedFiles(),
  // In the order of Bwrap.isolatedFds.
  data: [NodeFs.readFileSync(options.resolvConf), Seccomp.program()]
})
