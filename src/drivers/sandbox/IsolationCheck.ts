/**
 * What the sandbox driver checks at start before it runs any machine (docs/drivers.md
 * "Isolation"): that this host lets svc give each machine a user namespace of its own with a range
 * of host ids, a mount namespace, an idmapped mount of its disk (on the data dir's file system),
 * and cgroups with the memory, cpu and pids controllers. A host that cannot is refused: the driver
 * does not start, svc says what is missing, and machine changes answer 503 `runtime_unavailable`.
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { hostPath } from "../HostProcess.js"
import type * as Cgroups from "./Cgroups.js"
import { spawnerScript } from "./SpawnerScript.js"
import { refusedUntilAllowed } from "./Tools.js"
import { probeBase } from "./UidRanges.js"

/** Why machines cannot be isolated here, or undefined when they can. */
export const missingIsolation = (
  options: {
    readonly perl: string | undefined
    readonly dataDir: string
    /** undefined: cgroups were turned off on purpose (a test of the driver), not checked. */
    readonly cgroups: Cgroups.Cgroups | undefined
  }
): string | undefined => {
  if (options.perl === undefined) {
    return "isolating machines needs Perl under /usr (Debian package perl-base), which runs svc's spawner"
  }
  if (process.arch !== "x64" && process.arch !== "arm64") {
    return `isolating machines is built for x86_64 and aarch64 hosts, not ${process.arch}`
  }
  if (options.cgroups !== undefined && !options.cgroups.enforced) {
    return "svc cannot create cgroups with the memory, cpu and pids controllers (run svc as root; on " +
      "cgroup v2, delegate +cpu +memory +pids to svc's group): sizes could not be enforced"
  }
  const folder = NodePath.join(options.dataDir, "machines")
  try {
    NodeFs.mkdirSync(folder, { recursive: true, mode: 0o700 })
  } catch (cause) {
    return `cannot make ${folder}: ${String(cause)}`
  }
  const perl = options.perl
  // Once allowed on a file system, allowed on it for the rest of the process (Tools.ts says why).
  const why = refusedUntilAllowed(`isolation ${perl} ${NodeFs.statSync(folder).dev}`, () => {
    const probe = NodeChild.spawnSync(perl, ["-e", spawnerScript, "probe", String(probeBase), folder], {
      encoding: "utf8",
      env: { PATH: hostPath },
      timeout: 10_000
    })
    if (probe.status === 0) return undefined
    return `${probe.stdout ?? ""}${probe.stderr ?? ""}`.trim() || String(probe.error ?? `exit ${probe.status}`)
  })
  if (why === undefined) return undefined
  return `svc cannot give machines user namespaces of their own with idmapped disks here (Linux 5.12 ` +
    `or newer, run as root, user.max_user_namespaces above 0, a data dir on ext4, xfs, btrfs or tmpfs): ${why}`
}
