/**
 * CPU, memory and process limits by size, and exact CPU time, through cgroups where the host lets
 * svc create them (cgroup v1 `cpu`, `cpuacct`, `memory` and `pids` controllers, or cgroup v2). A
 * host that refuses (no permission, read-only /sys/fs/cgroup) runs no machine (IsolationCheck.ts);
 * `none` (a test's `cgroups: false`) runs them unlimited, CPU time sampled from /proc (SandboxDriver).
 *
 * A machine's groups are `<svc's own group>/svc/<id>` in each hierarchy. Their folders are
 * recorded in the machine's run record: a later svc process (after a restart, possibly in another
 * group) joins, counts and removes the groups the machine was booted in.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { defaultSizes, type SizeLimits } from "../../kernel/config/MachineSizes.js"

const memoryBytes = (limits: SizeLimits) => String(limits.memory_mib * 1024 ** 2)

const root = "/sys/fs/cgroup"
const period = 100_000

const ownPaths = new Map<string, string>()

/** svc's own cgroup path in a hierarchy (from /proc/self/cgroup; "" is the v2 one), when the host shows it. */
const ownPath = (controller: string) => {
  const known = ownPaths.get(controller)
  if (known !== undefined) return known
  let found = "/"
  try {
    for (const line of NodeFs.readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
      const [, controllers, path] = line.split(":")
      if (controllers !== undefined && controllers.split(",").includes(controller) && path !== undefined) {
        found = path
        break
      }
    }
  } catch {
    // no /proc/self/cgroup
  }
  ownPaths.set(controller, found)
  return found
}

const write = (path: string, value: string) => NodeFs.writeFileSync(path, value)

/** The group of machine `id` under a v1 `controller`, below svc's own group when it is visible, else the root. */
const groupDir = (controller: string, id: string) => {
  const own = NodePath.join(root, controller, ownPath(controller))
  const base = NodeFs.existsSync(own) ? own : NodePath.join(root, controller)
  return NodePath.join(base, "svc", id)
}

/** rmdir of a group (its files go with it); true when it is gone or never was. */
const removeGroup = (dir: string): boolean => {
  let entries: Array<NodeFs.Dirent> = []
  try {
    entries = NodeFs.readdirSync(dir, { withFileTypes: true })
  } catch {
    // gone
  }
  // The groups the machine made below its own (`delegate`) first, deepest first: rmdir of a group
  // that has children fails.
  for (const entry of entries) if (entry.isDirectory()) removeGroup(NodePath.join(dir, entry.name))
  try {
    NodeFs.rmdirSync(dir)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" // else busy: a process is still in it
  }
}

/** A machine's group folders, one per hierarchy. */
export type Groups = ReadonlyArray<string>

export interface Cgroups {
  /** True when limits are enforced on this host. */
  readonly enforced: boolean
  /** Where this svc process makes the groups of machine `id`. */
  readonly groupsOf: (id: string) => Groups
  /** Creates the machine's groups with its size's limits; undefined when the host refuses. */
  readonly prepare: (id: string, limits: SizeLimits) => Groups | undefined
}

/** Moves a process into the groups (the processes it forks afterwards follow). */
export const join = (groups: Groups, pid: number) => {
  for (const dir of groups) {
    try {
      write(NodePath.join(dir, "cgroup.procs"), String(pid))
    } catch {
      // the process is gone, or the group is
    }
  }
}

/** What the machine's root owns in its v1 groups: the folder (to make groups below) and where processes join. */
const delegatedFiles = ["", "tasks", "cgroup.procs"]

/**
 * Cgroup delegation on v1 (docs/drivers.md "Cgroup delegation"): the machine's root (host uid and
 * gid `uid`, its range's first) may make groups below its own in the cpu, cpuacct, memory and pids
 * hierarchies, limit them (a new group's files are its maker's) and move its processes into them,
 * while its own group's limit files stay the host root's. Child limits nest under the machine's
 * (hierarchical accounting); a memory hierarchy without it (`use_hierarchy` 0, kernels before
 * 5.11) or with a release agent is left undelegated, as is the freezer (svc's, for forks) and v2
 * (a leaf would be needed).
 */
export const delegate = (groups: Groups, uid: number) => {
  for (const dir of groups) {
    const file = (name: string) => NodePath.join(dir, name)
    if (!NodeFs.existsSync(file("tasks")) || NodeFs.existsSync(file("freezer.state"))) continue
    try {
      // A child's notify_on_release (its maker's to set) would run the hierarchy's agent as the host's root.
      const agent = NodePath.join(root, NodePath.relative(root, dir).split(NodePath.sep)[0]!, "release_agent")
      if (NodeFs.existsSync(agent) && NodeFs.readFileSync(agent, "utf8").trim() !== "") continue
      if (NodeFs.existsSync(file("memory.use_hierarchy"))) {
        if (NodeFs.readFileSync(file("memory.use_hierarchy"), "utf8").trim() !== "1") continue
      }
      for (const name of delegatedFiles) NodeFs.chownSync(file(name), uid, uid)
    } catch {
      // not allowed here: the machine runs, without groups of its own
    }
  }
}

/** The argv that moves itself into `groups` and then executes `argv` (so nothing escapes by a race). */
export const joinThen = (groups: Groups, argv: ReadonlyArray<string>): ReadonlyArray<string> => [
  "/bin/sh",
  "-c",
  `n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1/cgroup.procs" 2>/dev/null; shift; n=$((n - 1)); done; exec "$@"`,
  "svc-join",
  String(groups.length),
  ...groups,
  ...argv
]

/** CPU seconds used in the groups (v1 `cpuacct.usage`, v2 `cpu.stat`), or undefined when none counts. */
export const cpuSeconds = (groups: Groups): number | undefined => {
  for (const dir of groups) {
    // A stat, not a failed open: the abuse guard reads every running machine's counter each sample,
    // and a thrown ENOENT cost about half of each read on a cgroup v2 host.
    const usage = NodePath.join(dir, "cpuacct.usage")
    if (NodeFs.existsSync(usage)) {
      try {
        return Number(NodeFs.readFileSync(usage, "utf8")) / 1e9
      } catch {
        // removed meanwhile
      }
    }
    try {
      const usec = /^usage_usec (\d+)$/m.exec(NodeFs.readFileSync(NodePath.join(dir, "cpu.stat"), "utf8"))?.[1]
      if (usec !== undefined) return Number(usec) / 1e6
    } catch {
      // not there
    }
  }
  return undefined
}

/** Removes the groups once no process is left in them; answers whether none is left. */
export const remove = (groups: Groups) => groups.map(removeGroup).every(Boolean)

const v1 = (): Cgroups => {
  // The freezer pauses a machine whole for a fork (Freezer.ts), where the host mounts it.
  const freezer = NodeFs.existsSync(NodePath.join(root, "freezer")) ? ["freezer"] : []
  const groupsOf = (id: string) =>
    ["cpu", "cpuacct", "memory", "pids", ...freezer].map((controller) => groupDir(controller, id))
  return {
    enforced: true,
    groupsOf,
    prepare: (id, limits) => {
      const groups = groupsOf(id)
      try {
        const [cpu, , memory, pids] = groups
        for (const dir of groups) NodeFs.mkdirSync(dir, { recursive: true })
        write(NodePath.join(cpu!, "cpu.cfs_period_us"), String(period))
        write(NodePath.join(cpu!, "cpu.cfs_quota_us"), String(limits.cpus * period))
        write(NodePath.join(memory!, "memory.limit_in_bytes"), memoryBytes(limits))
        // Processes and threads: a fork past it fails with EAGAIN inside the machine.
        write(NodePath.join(pids!, "pids.max"), String(limits.processes))
        return groups
      } catch {
        remove(groups)
        return undefined
      }
    }
  }
}

const v2 = (): Cgroups => {
  const groupsOf = (id: string) => [NodePath.join(root, ownPath(""), "svc", id)]
  return {
    enforced: true,
    groupsOf,
    prepare: (id, limits) => {
      const [dir] = groupsOf(id)
      try {
        const parent = NodePath.dirname(dir!)
        try {
          // Controllers reach a group only through every ancestor's subtree_control.
          write(NodePath.join(NodePath.dirname(parent), "cgroup.subtree_control"), "+cpu +memory +pids")
        } catch {
          // enabled already, or refused (svc's own group holds processes): the next write tells
        }
        NodeFs.mkdirSync(parent, { recursive: true })
        write(NodePath.join(parent, "cgroup.subtree_control"), "+cpu +memory +pids")
        NodeFs.mkdirSync(dir!, { recursive: true })
        write(NodePath.join(dir!, "cpu.max"), `${limits.cpus * period} ${period}`)
        write(NodePath.join(dir!, "memory.max"), memoryBytes(limits))
        write(NodePath.join(dir!, "pids.max"), String(limits.processes))
        return [dir!]
      } catch {
        remove([dir!])
        return undefined
      }
    }
  }
}

/** No groups: nothing enforced, CPU time counted from /proc. */
export const none: Cgroups = {
  enforced: false,
  groupsOf: () => [],
  prepare: () => undefined
}

/** The cgroup flavour of this host; `none` when svc may not create groups. */
export const detect = (): Cgroups => {
  const flavour = NodeFs.existsSync(NodePath.join(root, "cgroup.controllers")) ? v2() : v1()
  const probe = flavour.prepare(`probe-${process.pid}`, defaultSizes.small)
  if (probe === undefined) return none
  remove(probe)
  return flavour
}
