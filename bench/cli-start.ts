/**
 * What one `svc` start costs the end-to-end tests (CI time, issue 36): `svc --version` and
 * `svc machines list --help` run to their end, alternated, from this checkout's bundle (what the
 * tests run, test/support/CheckoutBundle.ts) and, as the baseline in the same run, from the sources
 * through tsx (bin/svc.mjs, what they ran before). Figures: wall and CPU (user + system) medians.
 *
 *   node --import tsx bench/cli-start.ts [rounds=9]
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { checkoutBundle } from "../test/support/CheckoutBundle.js"

const rounds = Number(process.argv[2] ?? 9)
const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const entries = { bundle: checkoutBundle(), sources: NodePath.resolve("bin/svc.mjs") }
const commands = [["--version"], ["machines", "list", "--help"]]

/** Runs one start to its end; its wall time from spawn to exit. */
const start = (script: string, args: ReadonlyArray<string>) => {
  const began = process.hrtime.bigint()
  const result = NodeChild.spawnSync(process.execPath, [script, ...args], { stdio: "ignore" })
  const wall = Number(process.hrtime.bigint() - began) / 1e6
  if (result.status !== 0) throw new Error(`${script} ${args.join(" ")} exited ${result.status}`)
  return wall
}

// Children's CPU is not in process.resourceUsage; /proc/self/stat's cutime + cstime (fields 16, 17) has it.
const childrenCpuMs = () => {
  const fields = NodeFs.readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[13]) + Number(fields[14])) * 10
}

const figures: Record<string, { wall: Array<number>; cpu: Array<number> }> = {
  bundle: { wall: [], cpu: [] },
  sources: { wall: [], cpu: [] }
}
for (let round = 0; round < rounds; round++) {
  for (const [name, script] of Object.entries(entries)) {
    for (const args of commands) {
      const before = childrenCpuMs()
      figures[name]!.wall.push(start(script, args))
      figures[name]!.cpu.push(childrenCpuMs() - before)
    }
  }
}

const load = NodeFs.readFileSync("/proc/loadavg", "utf8").split(" ")[0]
console.log(`svc starts, ${rounds} rounds x ${commands.length} commands, load average ${load}`)
for (const [name, { cpu, wall }] of Object.entries(figures)) {
  console.log(`  ${name.padEnd(8)} wall p50 ${median(wall).toFixed(0)} ms, CPU p50 ${median(cpu).toFixed(0)} ms`)
}
const ratio = median(figures.bundle!.cpu) / median(figures.sources!.cpu)
console.log(`  bundle / sources CPU: ${ratio.toFixed(2)}x`)
