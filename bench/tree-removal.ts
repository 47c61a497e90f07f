/**
 * Removing a partial disk copy that a crash left (20,000 empty files in 200 folders), as a fork or a
 * restore does before it copies: how long the event loop (which every machine's actor shares) stands
 * still, and how long the removal takes. svc's `removeTree` (an `rm -rf` child process) against the
 * baselines of the same run: `fs.rmSync` and `fs.promises.rm` in this process.
 * Formerly a bound in test/e2e/snapshotsRestore.test.ts (no stall over 300 ms), which now checks only
 * that the loop turns during the removal.
 *
 *   node --import tsx bench/tree-removal.ts [folders=200] [files per folder=100] [rounds=3]
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { removeTree } from "../src/snapshots/store/Tree.js"

const folders = Number(process.argv[2] ?? 200)
const perFolder = Number(process.argv[3] ?? 100)
const rounds = Number(process.argv[4] ?? 3)

const makeTree = async (root: string) => {
  for (let folder = 0; folder < folders; folder++) {
    const at = NodePath.join(root, `d${folder}`)
    await NodeFs.promises.mkdir(at, { recursive: true })
    await Promise.all(Array.from({ length: perFolder }, (_, file) => NodeFs.promises.writeFile(`${at}/f${file}`, "")))
  }
}

/** Runs `remove` while a 5 ms timer notes the longest gap between its turns. */
const measure = async (remove: (path: string) => unknown) => {
  const root = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-bench-tree-")), "disk.partial")
  await makeTree(root)
  const seen = { last: performance.now(), longest: 0 }
  const timer = setInterval(() => {
    const now = performance.now()
    seen.longest = Math.max(seen.longest, now - seen.last)
    seen.last = now
  }, 5)
  const started = performance.now()
  seen.last = started
  await remove(root)
  const took = performance.now() - started
  // The last stretch, from the timer's last turn to the end.
  seen.longest = Math.max(seen.longest, performance.now() - seen.last)
  clearInterval(timer)
  NodeFs.rmSync(NodePath.dirname(root), { recursive: true, force: true })
  return { stall: seen.longest, took }
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const ways = {
  "removeTree (rm -rf child)": (path: string) => removeTree(path),
  "baseline fs.rmSync": (path: string) => NodeFs.rmSync(path, { recursive: true, force: true }),
  "baseline fs.promises.rm": (path: string) => NodeFs.promises.rm(path, { recursive: true, force: true })
}
const results = new Map<string, Array<{ stall: number; took: number }>>()
// Rounds alternate the ways, so a busy moment of the host does not fall on one of them only.
for (let round = 0; round < rounds; round++) {
  for (const [name, remove] of Object.entries(ways)) {
    results.set(name, [...(results.get(name) ?? []), await measure(remove)])
  }
}
console.log(`removing ${folders * perFolder} files in ${folders} folders, median of ${rounds}:`)
const ours = median(results.get("removeTree (rm -rf child)")!.map((r) => r.stall))
for (const [name, runs] of results) {
  const stall = median(runs.map((r) => r.stall))
  console.log(
    `${name.padEnd(28)} longest event-loop stall ${stall.toFixed(0).padStart(5)} ms, removal ${
      median(runs.map((r) => r.took)).toFixed(0).padStart(5)
    } ms; stall ${(stall / ours).toFixed(1)} x removeTree's`
  )
}
