/**
 * What a machine's cgroups say of its use now (its stats and /metrics): memory in use and its
 * limit, processes and their limit. cgroup v1 keeps them in the memory and pids hierarchies (a
 * folder each), v2 in the machine's one folder; each figure is looked for in every folder of the
 * machine's groups, under its v1 name, then its v2 name. CPU time is Cgroups.cpuSeconds.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { Groups } from "./Cgroups.js"

export interface GroupUsage {
  readonly memoryBytes?: number | undefined
  readonly memoryLimitBytes?: number | undefined
  readonly processes?: number | undefined
  readonly processesLimit?: number | undefined
}

/** v1 writes "no limit" as the largest page-aligned 64-bit number, v2 as `max`. */
const unlimited = 2 ** 62

const readText = (path: string) => {
  try {
    return NodeFs.readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

/** The first of `names` found in a folder of `groups`, as a number; undefined when none or no limit. */
const firstNumber = (groups: Groups, names: ReadonlyArray<string>) => {
  for (const name of names) {
    for (const dir of groups) {
      const text = readText(NodePath.join(dir, name))?.trim()
      if (text === undefined) continue
      const value = Number(text)
      return text === "max" || !Number.isFinite(value) || value >= unlimited ? undefined : value
    }
  }
  return undefined
}

/** A `key value` line of a stat file (memory.stat), or 0. */
const statValue = (groups: Groups, file: string, key: string) => {
  for (const dir of groups) {
    const text = readText(NodePath.join(dir, file))
    if (text === undefined) continue
    const found = new RegExp(`^${key} (\\d+)$`, "m").exec(text)?.[1]
    return found === undefined ? 0 : Number(found)
  }
  return 0
}

/**
 * Memory in use without the inactive page cache (files read or written long ago, which the kernel
 * takes back before it reaches the limit), as `docker stats` counts: v1 `memory.usage_in_bytes`
 * less `total_inactive_file`, v2 `memory.current` less `inactive_file`.
 */
const memoryInUse = (groups: Groups) => {
  const v1 = firstNumber(groups, ["memory.usage_in_bytes"])
  if (v1 !== undefined) return Math.max(0, v1 - statValue(groups, "memory.stat", "total_inactive_file"))
  const v2 = firstNumber(groups, ["memory.current"])
  if (v2 !== undefined) return Math.max(0, v2 - statValue(groups, "memory.stat", "inactive_file"))
  return undefined
}

export const groupUsage = (groups: Groups): GroupUsage => ({
  memoryBytes: memoryInUse(groups),
  memoryLimitBytes: firstNumber(groups, ["memory.limit_in_bytes", "memory.max"]),
  processes: firstNumber(groups, ["pids.current"]),
  processesLimit: firstNumber(groups, ["pids.max"])
})
