/**
 * `svc doctor`'s look at the host (docs/install.md "Check the host"): every program the sandbox
 * driver runs, and the kernel features it needs, each with what to install when it is missing. The
 * probes are the driver's own (Tools.ts, Disk.ts, Cgroups.ts, IsolationCheck.ts), so what passes
 * here is what the driver checks at start.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Cgroups from "./Cgroups.js"
import * as Disk from "./Disk.js"
import { missingIsolation } from "./IsolationCheck.js"
import { refusedNamespaces, refusedNetNamespace, usrPerl, which } from "./Tools.js"

export interface HostCheck {
  readonly name: string
  /** ok; warn: svc runs, something is lost; fail: machines cannot run. */
  readonly status: "ok" | "warn" | "fail"
  /** What was found, or what to do. */
  readonly detail: string
}

/** The programs, each with its Debian package and what needs it. */
const programs: ReadonlyArray<readonly [name: string, pkg: string, use: string]> = [
  ["bwrap", "bubblewrap", "each machine's sandbox"],
  ["unshare", "util-linux", "machines' network namespaces"],
  ["nsenter", "util-linux", "exec into a machine"],
  ["ip", "iproute2", "machines' network namespaces"],
  ["slirp4netns", "slirp4netns", "machines' internet access"],
  ["nft", "nftables", "machines' network rules"],
  ["mkfs.ext4", "e2fsprogs", "machines' disk images"],
  ["losetup", "mount", "loop-mounting machines' disks"],
  ["fsfreeze", "util-linux", "consistent snapshots of a running machine"],
  ["perl", "perl-base", "svc's spawner and launcher (under /usr, so machines see it)"]
]

/** The cgroup controllers svc limits machines with (io: not enforced yet, reported as a warning). */
const controllers: ReadonlyArray<readonly [v2: string, v1: string, required: boolean]> = [
  ["cpu", "cpu", true],
  ["memory", "memory", true],
  ["pids", "pids", true],
  ["io", "blkio", false]
]

const cgroupRoot = "/sys/fs/cgroup"

/** The controllers svc's own group may hand to the groups it makes (v2), or the hierarchies mounted (v1). */
const availableControllers = (): { readonly version: 1 | 2; readonly names: ReadonlySet<string> } => {
  if (NodeFs.existsSync(NodePath.join(cgroupRoot, "cgroup.controllers"))) {
    let own = "/"
    try {
      own = /^0::(.*)$/m.exec(NodeFs.readFileSync("/proc/self/cgroup", "utf8"))?.[1] ?? "/"
    } catch {
      // the root group
    }
    let text = ""
    try {
      text = NodeFs.readFileSync(NodePath.join(cgroupRoot, own, "cgroup.controllers"), "utf8")
    } catch {
      // none
    }
    return { version: 2, names: new Set(text.split(/\s+/).filter(Boolean)) }
  }
  const names = new Set<string>()
  for (const [v2, v1] of controllers) if (NodeFs.existsSync(NodePath.join(cgroupRoot, v1))) names.add(v2)
  return { version: 1, names }
}

const readNumber = (path: string) => {
  try {
    return Number(NodeFs.readFileSync(path, "utf8").trim())
  } catch {
    return undefined
  }
}

/** The data dir made if missing, and a file written and removed in it; why not, if it cannot be. */
const unwritable = (dataDir: string): string | undefined => {
  try {
    NodeFs.mkdirSync(dataDir, { recursive: true, mode: 0o750 })
    const probe = NodePath.join(dataDir, `.doctor-${process.pid}`)
    NodeFs.writeFileSync(probe, "")
    NodeFs.rmSync(probe)
    return undefined
  } catch (cause) {
    return (cause as Error).message
  }
}

const ok = (name: string, detail: string): HostCheck => ({ name, status: "ok", detail })
const fail = (name: string, detail: string): HostCheck => ({ name, status: "fail", detail })

/**
 * Every check, in order. `isolated`: the sandbox driver is the one configured (SVC_RUNTIME), so
 * what it needs is required; otherwise its checks are only warnings.
 */
export const checkHost = (options: { readonly dataDir: string; readonly isolated: boolean }) => {
  const needed = (check: HostCheck): HostCheck =>
    options.isolated || check.status !== "fail" ? check : { ...check, status: "warn" }
  const checks: Array<HostCheck> = []
  const found = new Map<string, string>()
  for (const [name, pkg, use] of programs) {
    const path = name === "perl" ? usrPerl() ?? which(name) : which(name)
    if (path !== undefined && (name !== "perl" || path.startsWith("/usr/"))) {
      found.set(name, path)
      checks.push(ok(name, path))
    } else {
      checks.push(needed(fail(
        name,
        `${path === undefined ? "not found" : `${path} is not under /usr`}; needed for ${use}: apt-get install ${pkg}`
      )))
    }
  }
  const skipped = (name: string, missing: string) => needed(fail(name, `not checked: needs ${missing} (above)`))

  // A probe's answer: ok, or its refusal after what to do.
  const probed = (name: string, refusal: string | undefined, done: string, fix: string) =>
    refusal === undefined ? ok(name, done) : needed(fail(name, `${fix}: ${refusal}`))

  const bwrap = found.get("bwrap")
  if (readNumber("/proc/sys/user/max_user_namespaces") === 0) {
    checks.push(
      needed(fail("user namespaces", "user.max_user_namespaces is 0: sysctl -w user.max_user_namespaces=65536"))
    )
  } else if (bwrap === undefined) {
    checks.push(skipped("user namespaces", "bwrap"))
  } else {
    checks.push(probed(
      "user namespaces",
      refusedNamespaces(bwrap),
      "bwrap made user, mount, pid and network namespaces",
      "bwrap cannot make namespaces (run svc as root)"
    ))
  }
  const unshare = found.get("unshare")
  const ip = found.get("ip")
  checks.push(
    unshare === undefined || ip === undefined
      ? skipped("network namespaces", "unshare and ip")
      : probed(
        "network namespaces",
        refusedNetNamespace(unshare, ip),
        "unshare --net made one",
        "svc cannot make network namespaces (run svc as root)"
      )
  )

  const available = availableControllers()
  for (const [name, v1, required] of controllers) {
    const label = `cgroup ${name}`
    if (available.names.has(name)) {
      checks.push(ok(label, available.version === 2 ? "delegated to svc's group (cgroup v2)" : `${v1} (cgroup v1)`))
    } else {
      const how = available.version === 2
        ? `not delegated to svc's group: enable it in the parent's cgroup.subtree_control (systemd: Delegate=${name})`
        : `the ${v1} hierarchy is not mounted under ${cgroupRoot}`
      checks.push(
        required
          ? needed(fail(label, `${how}; machines' sizes cannot be enforced`))
          : { name: label, status: "warn", detail: `${how} (svc does not limit disk I/O yet)` }
      )
    }
  }
  checks.push(
    Cgroups.detect().enforced
      ? ok("cgroups", "svc made a group with cpu, memory and pids limits and removed it")
      : needed(fail("cgroups", "svc cannot create cgroups with the cpu, memory and pids controllers (run svc as root)"))
  )

  const loop = NodeFs.existsSync("/dev/loop-control") || NodeFs.existsSync("/dev/loop0")
  checks.push(
    loop
      ? ok("loop devices", "/dev/loop-control")
      : needed(fail("loop devices", "no /dev/loop-control: modprobe loop (in a container: give it loop devices)"))
  )
  const diskTools = ["mkfs.ext4", "losetup"].filter((name) => !found.has(name))
  if (!loop || diskTools.length > 0) {
    checks.push(skipped("machine disks", loop ? diskTools.join(" and ") : "loop devices"))
  } else {
    const why = Disk.unusable()
    checks.push(
      why === undefined
        ? ok("machine disks", "an ext4 image made, loop-mounted and removed")
        : needed(fail("machine disks", why))
    )
  }

  const why = unwritable(options.dataDir)
  checks.push(why === undefined ? ok("data dir", `${options.dataDir} is writable`) : fail("data dir", why))

  const perl = found.get("perl")
  if (why !== undefined) {
    checks.push(skipped("isolation", "a writable data dir"))
  } else if (perl === undefined) {
    checks.push(skipped("isolation", "perl"))
  } else {
    const missing = missingIsolation({ perl, dataDir: options.dataDir, cgroups: undefined })
    checks.push(
      missing === undefined
        ? ok("isolation", "a user namespace of its own with an idmapped disk, on the data dir's file system")
        : needed(fail("isolation", missing))
    )
  }
  return checks
}
