/**
 * What machine disks cost (docs/drivers.md "Disk"), on the sandbox driver, as root:
 *
 * 1. The empty file system of a create: mkfs.ext4 of a fresh sparse 20 GiB file against a sparse
 *    copy of the template (what create does), alternated; then a whole `create` (copy + mount).
 * 2. Fork of a running machine holding 1 GiB: `copyDisk` (freezer, fsfreeze, image copy, thaw).
 * 3. Write throughput: `dd` of 1 GiB with fsync in a machine against the same on the host's file
 *    system that holds the data dir, alternated, in the same run (ratio).
 *
 *   node --import tsx bench/disk.ts [rounds=5] [MiB=1024]
 */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { MachineDriver, type MachineDriverShape } from "../src/drivers/MachineDriver.js"
import { unmountUnder } from "../src/drivers/sandbox/Disk.js"
import * as SandboxDriver from "../src/drivers/sandbox/SandboxDriver.js"

const rounds = Number(process.argv[2] ?? 5)
const mib = Number(process.argv[3] ?? 1024)
const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}
const timed = (run: () => void) => {
  const start = performance.now()
  run()
  return performance.now() - start
}
const spec = (id: string) => ({ id, size: "default" as const, image: "default", internetAccess: false, env: {} })

const exec = (driver: MachineDriverShape, id: string, script: string) =>
  Effect.gen(function*() {
    let output = ""
    const { exitCode } = yield* driver.exec(
      id,
      { argv: ["/bin/sh", "-c", script] },
      (_, chunk) => Effect.sync(() => void (output += Buffer.from(chunk).toString()))
    )
    if (exitCode !== 0) throw new Error(`${script}: exit ${exitCode}: ${output}`)
    return output
  })

/** dd's own figure of seconds ("... copied, 3.2 s, ..."). */
const ddSeconds = (output: string) => Number(/copied, ([\d.]+) s/.exec(output)?.[1])

const dataDir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-bench-disk-"))
const program = Effect.gen(function*() {
  const driver = yield* MachineDriver
  const scratch = NodePath.join(dataDir, "scratch")
  NodeFs.mkdirSync(scratch)
  const template = NodePath.join(dataDir, "disk-templates", "ext4-20480.img")
  yield* driver.create(spec("warm"))
  const mkfs: Array<number> = []
  const copy: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    const target = NodePath.join(scratch, `x${round}.img`)
    mkfs.push(timed(() => {
      NodeChild.execFileSync("truncate", ["-s", "20G", target])
      NodeChild.execFileSync("mkfs.ext4", ["-q", "-F", "-m", "0", "-E", "lazy_journal_init=1", target])
    }))
    NodeFs.rmSync(target)
    copy.push(timed(() => NodeChild.execFileSync("cp", ["--sparse=always", template, target])))
    NodeFs.rmSync(target)
  }
  console.log(
    `empty 20 GiB file system (size default): mkfs.ext4 ${median(mkfs).toFixed(1)} ms, sparse copy of the template ${
      median(copy).toFixed(1)
    } ms (median of ${rounds})`
  )
  const creates: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    const start = performance.now()
    yield* driver.create(spec(`c${round}`))
    creates.push(performance.now() - start)
    yield* driver.destroy(`c${round}`)
  }
  console.log(`create (copy + mount + folders): ${median(creates).toFixed(1)} ms (median of ${rounds})`)

  yield* driver.start(spec("warm"))
  yield* exec(driver, "warm", `head -c ${mib}M /dev/urandom > /root/data && sync`)
  const forks: Array<number> = []
  for (let round = 0; round < Math.min(rounds, 3); round++) {
    const start = performance.now()
    const copied = yield* driver.copyDisk!("warm", `f${round}`)
    forks.push(performance.now() - start)
    console.log(
      `fork of a running machine holding ${mib} MiB: ${((performance.now() - start) / 1000).toFixed(2)} s (${
        ((copied ?? 0) / 1024 ** 2).toFixed(0)
      } MiB copied)`
    )
    NodeFs.rmSync(NodePath.join(dataDir, "machines", `f${round}`), { recursive: true, force: true })
  }
  console.log(`fork: median ${(median(forks) / 1000).toFixed(2)} s`)
  yield* exec(driver, "warm", "rm -f /root/data")

  const inside: Array<number> = []
  const host: Array<number> = []
  const dd = (file: string) => `dd if=/dev/zero of=${file} bs=1M count=${mib} conv=fsync 2>&1; rm -f ${file}`
  for (let round = 0; round < Math.min(rounds, 3); round++) {
    inside.push(mib / ddSeconds(yield* exec(driver, "warm", dd("/root/dd.bin"))))
    host.push(
      mib / ddSeconds(NodeChild.execFileSync("/bin/sh", ["-c", dd(NodePath.join(scratch, "dd.bin"))]).toString())
    )
  }
  console.log(
    `write ${mib} MiB with fsync: machine ${median(inside).toFixed(0)} MiB/s, host ${
      median(host).toFixed(0)
    } MiB/s, ratio ${(median(inside) / median(host)).toFixed(2)} (medians of ${inside.length}, alternated)`
  )
  yield* driver.destroy("warm")
})

Effect.runPromise(Effect.provide(Effect.scoped(program), SandboxDriver.layer({ dataDir }))).then(
  () => NodeFs.rmSync(dataDir, { recursive: true, force: true }),
  (error) => {
    console.error(error)
    unmountUnder(dataDir)
    process.exitCode = 1
  }
)
