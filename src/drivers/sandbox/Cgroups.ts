/**
 * CPU and memory limits by size, and exact CPU time, through cgroups where the host lets svc
 * create them (cgroup v1 `cpu`, `cpuacct` and `memory` controllers, or cgroup v2). Best effort: a
 * host that refuses (no permission, read-only /sys/fs/cgroup) leaves machines unlimited, says so
 * once in the log, and CPU time falls back to /proc sampling (see SandboxDriver).
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { Size } from "../MachineDriver.js"

/** extensions.md §5: small 1 CPU 1 GiB, default 2 CPU 4 GiB, large 4 CPU 8 GiB. */
export const sizes: Record<Size, { readonly cpus: number; readonly memoryBytes: number }> = {
  small: { cpus: 1, memoryBytes: 1 * 1024 ** 3 },
  default: { cpus: 2, memoryBytes: 4 * 1024 ** 3 },
  large: { cpus: 4, memoryBytes: 8 * 1024 ** 3 }
}

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

/** The group of machine `id` under `controller`, preferring svc's own group, else the root. */
const groupDir = (controller: string, id: string) => {
  const own = NodePath.join(root, controller, ownPath(controller))
  const base = NodeFs.existsSync(own) ? own : NodePath.join(root, controller)
  return NodePath.join(base, "svc", id)
}

/** rmdir of a group (its files go with it); true when it is gone or never was. */
const removeGroup = (dir: string) => {
  try {
    NodeFs.rmdirSync(dir)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" // else busy: a process is still in it
  }
}

export interface Cgroups {
  /** True when limits are enforced on this host. */
  readonly enforced: boolean
  /** Creates the machine's groups with its size's limits; false when the host refuses. */
  readonly prepare: (id: string, size: Size) => boolean
  /** Moves a process into the machine's groups (its children follow). */
  readonly join: (id: string, pid: number) => void
  /** CPU seconds used in the machine's groups, or undefined without cpu accounting. */
  readonly cpuSeconds: (id: string) => number | undefined
  /** Removes the machine's groups once no process is left in them; answers whether none is left. */
  readonly remove: (id: string) => boolean
}

const v1 = (): Cgroups => {
  const controllers = ["cpu", "cpuacct", "memory"] as const
  const dirs = (id: string) => controllers.map((controller) => groupDir(controller, id))
  return {
    enforced: true,
    prepare: (id, size) => {
      try {
        const [cpu, , memory] = dirs(id)
        for (const dir of dirs(id)) NodeFs.mkdirSync(dir, { recursive: true })
        write(NodePath.join(cpu!, "cpu.cfs_period_us"), String(period))
        write(NodePath.join(cpu!, "cpu.cfs_quota_us"), String(sizes[size].cpus * period))
        write(NodePath.join(memory!, "memory.limit_in_bytes"), String(sizes[size].memoryBytes))
        return true
      } catch {
        return false
      }
    },
    join: (id, pid) => {
      for (const dir of dirs(id)) {
        try {
          write(NodePath.join(dir, "cgroup.procs"), String(pid))
        } catch {
          // the process is gone, or the group is not there on this host
        }
      }
    },
    cpuSeconds: (id) => {
      try {
        return Number(NodeFs.readFileSync(NodePath.join(groupDir("cpuacct", id), "cpuacct.usage"), "utf8")) / 1e9
      } catch {
        return undefined
      }
    },
    remove: (id) => dirs(id).map(removeGroup).every(Boolean)
  }
}

const v2 = (): Cgroups => {
  const dir = (id: string) => NodePath.join(root, ownPath(""), "svc", id)
  return {
    enforced: true,
    prepare: (id, size) => {
      try {
        const parent = NodePath.dirname(dir(id))
        try {
          // Controllers reach a group only through every ancestor's subtree_control.
          write(NodePath.join(NodePath.dirname(parent), "cgroup.subtree_control"), "+cpu +memory")
        } catch {
          // enabled already, or refused (svc's own group holds processes): the next write tells
        }
        NodeFs.mkdirSync(parent, { recursive: true })
        write(NodePath.join(parent, "cgroup.subtree_control"), "+cpu +memory")
        NodeFs.mkdirSync(dir(id), { recursive: true })
        write(NodePath.join(dir(id), "cpu.max"), `${sizes[size].cpus * period} ${period}`)
        write(NodePath.join(dir(id), "memory.max"), String(sizes[size].memoryBytes))
        return true
      } catch {
        return false
      }
    },
    join: (id, pid) => {
      try {
        write(NodePath.join(dir(id), "cgroup.procs"), String(pid))
      } catch {
        // gone
      }
    },
    cpuSeconds: (id) => {
      try {
        const stat = NodeFs.readFileSync(NodePath.join(dir(id), "cpu.stat"), "utf8")
        return Number(/usage_usec (\d+)/.exec(stat)?.[1]) / 1e6
      } catch {
        return undefined
      }
    },
    remove: (id) => removeGroup(dir(id))
  }
}

/** No groups: nothing enforced, CPU time counted from /proc. */
export const none: Cgroups = {
  enforced: false,
  prepare: () => false,
  join: () => undefined,
  cpuSeconds: () => undefined,
  remove: () => true
}

/** The cgroup flavour of this host; `none` when svc may not create groups. */
export const detect = (): Cgroups => {
  const flavour = NodeFs.existsSync(NodePath.join(root, "cgroup.controllers")) ? v2() : v1()
  const probe = `probe-${process.pid}`
  if (!flavour.prepare(probe, "small")) return none
  flavour.remove(probe)
  return flavour
}
