/**
 * The cgroup readers of a machine's stats on both layouts, over folders laid out as the kernel
 * shows them: v1 (memory and pids hierarchies, "no limit" as a huge number) and v2 (one folder,
 * `max`). This host runs v1; the v2 files are the kernel's documented ones.
 */
import { assert, describe, it } from "@effect/vitest"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { groupUsage } from "../../src/drivers/sandbox/CgroupUsage.js"

const folder = (files: Record<string, string>) => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-cgroup-"))
  for (const [name, text] of Object.entries(files)) NodeFs.writeFileSync(NodePath.join(dir, name), text)
  return dir
}

describe("cgroup usage", () => {
  it("v1: memory less its inactive page cache, pids, and their limits across hierarchies", () => {
    const cpu = folder({ "cpu.cfs_quota_us": "100000\n" })
    const memory = folder({
      "memory.usage_in_bytes": "300000000\n",
      "memory.limit_in_bytes": "1073741824\n",
      "memory.stat": "cache 90000000\nrss 200000000\ntotal_inactive_file 80000000\ninactive_file 1\n"
    })
    const pids = folder({ "pids.current": "57\n", "pids.max": "1024\n" })
    assert.deepStrictEqual(groupUsage([cpu, memory, pids]), {
      memoryBytes: 220_000_000,
      memoryLimitBytes: 1_073_741_824,
      processes: 57,
      processesLimit: 1024
    })
    const unlimited = folder({ "memory.usage_in_bytes": "4096\n", "memory.limit_in_bytes": "9223372036854771712\n" })
    assert.isUndefined(groupUsage([unlimited]).memoryLimitBytes)
  })

  it("v2: memory.current less inactive_file, max as no limit", () => {
    const dir = folder({
      "memory.current": "500000000\n",
      "memory.max": "max\n",
      "memory.stat": "anon 400000000\nfile 100000000\ninactive_file 60000000\n",
      "pids.current": "3\n",
      "pids.max": "2048\n"
    })
    assert.deepStrictEqual(groupUsage([dir]), {
      memoryBytes: 440_000_000,
      memoryLimitBytes: undefined,
      processes: 3,
      processesLimit: 2048
    })
  })

  it("a group that is gone reads as nothing", () => {
    assert.deepStrictEqual(groupUsage(["/nonexistent/svc/x"]), {
      memoryBytes: undefined,
      memoryLimitBytes: undefined,
      processes: undefined,
      processesLimit: undefined
    })
  })
})
