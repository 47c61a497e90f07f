/** The host programs the sandbox driver runs, found once at start (SandboxDriver.ts `layer`). */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { hostPath } from "../HostProcess.js"
import { attempt } from "../MachineFiles.js"
import type * as Network from "./Network.js"

/** An executable on PATH, as an absolute path. */
export const which = (name: string) => {
  for (const dir of hostPath.split(":")) {
    const path = NodePath.join(dir || ".", name)
    try {
      NodeFs.accessSync(path, NodeFs.constants.X_OK)
      return NodePath.resolve(path)
    } catch {
      // not here
    }
  }
  return undefined
}

export interface Tools extends Network.NetTools {
  readonly bwrap: string
  readonly nsenter: string
  /** Perl under /usr (so machines see it too), for the launcher; without it exec enters every time. */
  readonly perl?: string | undefined
}

/**
 * Perl for the spawner and launcher, as its real path when that is under /usr (machines see /usr,
 * so the launcher runs in them by that path); undefined otherwise.
 */
export const usrPerl = (): string | undefined => {
  const found = which("perl")
  if (found === undefined) return undefined
  const real = NodeFs.realpathSync(found)
  return real.startsWith("/usr/") ? real : undefined
}

const why = (result: NodeChild.SpawnSyncReturns<string>) =>
  result.status === 0 ? undefined : (result.stderr ?? "").trim() || String(result.error ?? `exit ${result.status}`)

const allowed = new Set<string>()

/**
 * A probe of what the host allows, run until it answers "allowed" once in this process: the kernel
 * does not take that back while svc runs, and a driver is built per test in the suite (two probes
 * cost about 0.5 s each time on a loaded host). A refusal is asked again, so a fixed host is seen.
 */
export const refusedUntilAllowed = (key: string, probe: () => string | undefined): string | undefined => {
  if (allowed.has(key)) return undefined
  const refused = probe()
  if (refused === undefined) allowed.add(key)
  return refused
}

/** Why svc cannot make a network namespace (each machine's is made outside its user namespace), if it cannot. */
export const refusedNetNamespace = (unshare: string, ip: string): string | undefined =>
  refusedUntilAllowed(
    `net ${unshare} ${ip}`,
    () => why(NodeChild.spawnSync(unshare, ["--net", "--", ip, "link", "set", "lo", "up"], { encoding: "utf8" }))
  )

/** Why bwrap cannot make every namespace (user, mount, pid, net, ipc, uts, cgroup) here, if it cannot. */
export const refusedNamespaces = (bwrap: string): string | undefined =>
  refusedUntilAllowed(
    `bwrap ${bwrap}`,
    () => why(NodeChild.spawnSync(bwrap, ["--unshare-all", "--ro-bind", "/", "/", "true"], { encoding: "utf8" }))
  )

/** Finds bwrap and nsenter, and checks that bwrap can make namespaces here; one clear line if not. */
export const checkTools = attempt("sandbox driver", (): Tools => {
  const bwrap = which("bwrap")
  if (bwrap === undefined) {
    throw new Error(
      "bwrap not found: install bubblewrap (Debian package `bubblewrap`), or set SVC_RUNTIME=process (no isolation)"
    )
  }
  const nsenter = which("nsenter")
  if (nsenter === undefined) throw new Error("nsenter not found: install util-linux")
  const perl = usrPerl()
  const unshare = which("unshare")
  if (unshare === undefined) throw new Error("unshare not found: install util-linux")
  const ip = which("ip")
  if (ip === undefined) throw new Error("ip not found: install iproute2 (machines' network namespaces need it)")
  // Machines have internet access unless asked otherwise: without its path no default create boots.
  const slirp4netns = which("slirp4netns")
  const nft = which("nft")
  if (slirp4netns === undefined || nft === undefined) {
    throw new Error(
      "slirp4netns or nft not found: install slirp4netns and nftables (machines' internet access needs them)"
    )
  }
  const netRefused = refusedNetNamespace(unshare, ip)
  if (netRefused !== undefined) {
    throw new Error(`svc cannot make network namespaces here (run svc as root): ${netRefused}`)
  }
  const bwrapRefused = refusedNamespaces(bwrap)
  if (bwrapRefused !== undefined) {
    throw new Error(
      `bwrap cannot create namespaces here (run svc as root or allow user namespaces): ${bwrapRefused}`
    )
  }
  return {
    bwrap,
    nsenter,
    unshare,
    ip,
    slirp4netns,
    nft,
    perl
  }
})
