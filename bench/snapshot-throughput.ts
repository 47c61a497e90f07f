/**
 * Snapshot throughput on a 1 GiB disk of mixed files (10,000 small, 4 large), through the real
 * `svc serve` (POST to ready), each against a baseline on the same data in the same run:
 *
 * 1. first push            vs `tar -c | tar -x` of the disk folder (then `sync -f`)
 * 2. incremental push after changing 1% of the bytes (target: stores at most 5% of the disk,
 *    takes at most a fifth of the first push's time)
 * 3. restore to a new machine vs `cp -a` of the disk folder (then `sync -f`)
 *
 *     node --import tsx bench/snapshot-throughput.ts [total MiB = 1024] [small files = 10000]
 *
 * The push includes a syncfs of the store and the restore one of the new disk, as the baselines do.
 */
import * as NodeChild from "node:child_process"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { createMachine, httpClient, serve, settled, sleep, tempDir } from "./support.js"

const MiB = 1024 * 1024
const totalMiB = Number(process.argv[2] ?? 1024)
const smallFiles = Number(process.argv[3] ?? 10_000)
const largeFiles = 4

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`
const rate = (bytes: number, ms: number) => `${(bytes / MiB / (ms / 1000)).toFixed(0)} MiB/s`

const shell = (script: string) => NodeChild.execFileSync("/bin/sh", ["-c", script], { stdio: "inherit" })
const timed = async (work: () => unknown | Promise<unknown>) => {
  const start = performance.now()
  await work()
  return performance.now() - start
}

const served = await serve({ SVC_RUNTIME: process.env.SVC_RUNTIME ?? "sandbox" })
// A fresh connection for each phase: the server closes keep-alive sockets idle during a baseline.
let client = httpClient(served, 8)
const fresh = () => {
  client.close()
  client = httpClient(served, 8)
}
const scratch = tempDir("snapshot")
try {
  const made = await createMachine(client, "bench-source", { start: false })
  await settled(client, made.operation_id, 20)
  const disk = NodePath.join(served.dataDir, "machines", made.machine_id, "disk")

  // The disk: small files of 1-40 KiB in 100 folders, the rest in 4 large files; random bytes.
  const smallSizes = Array.from({ length: smallFiles }, (_, i) => 1024 + ((i * 7919) % (39 * 1024)))
  const smallBytes = smallSizes.reduce((a, b) => a + b, 0)
  const largeSize = Math.floor((totalMiB * MiB - smallBytes) / largeFiles)
  smallSizes.forEach((size, i) => {
    const folder = NodePath.join(disk, "workspace", "src", `d${i % 100}`)
    NodeFs.mkdirSync(folder, { recursive: true })
    NodeFs.writeFileSync(NodePath.join(folder, `f${i}.txt`), NodeCrypto.randomBytes(size))
  })
  for (let i = 0; i < largeFiles; i++) {
    const handle = NodeFs.openSync(NodePath.join(disk, "root", `large${i}.bin`), "w")
    for (let written = 0; written < largeSize; written += 8 * MiB) {
      NodeFs.writeSync(handle, NodeCrypto.randomBytes(Math.min(8 * MiB, largeSize - written)))
    }
    NodeFs.closeSync(handle)
  }
  shell(`sync -f ${disk}`)
  const diskBytes = smallBytes + largeFiles * largeSize
  console.log(
    `disk: ${(diskBytes / MiB).toFixed(0)} MiB, ${smallFiles} small files (${
      (smallBytes / MiB).toFixed(0)
    } MiB), ${largeFiles} large`
  )

  const push = async () => {
    fresh()
    const start = performance.now()
    const accepted = await client.call("POST", `/v1/machines/${made.machine_id}/snapshots`, {})
    if (accepted.status !== 202) throw new Error(JSON.stringify(accepted.body))
    while (true) {
      const snapshot = (await client.call("GET", `/v1/snapshots/${accepted.body.snapshot_id}`)).body
      if (snapshot.status === "ready") return { ms: performance.now() - start, snapshot }
      if (snapshot.status === "failed") throw new Error(JSON.stringify(snapshot))
      await sleep(20)
    }
  }

  // 1. First push against tar.
  const tarTarget = NodePath.join(scratch, "tar")
  NodeFs.mkdirSync(tarTarget)
  const tarMs = await timed(() => shell(`tar -C ${disk} -cf - . | tar -C ${tarTarget} -xf - && sync -f ${tarTarget}`))
  NodeFs.rmSync(tarTarget, { recursive: true, force: true })
  const first = await push()
  console.log(
    `first push:  ${seconds(first.ms)} (${rate(diskBytes, first.ms)}), uploaded ${
      (first.snapshot.uploaded_bytes / MiB).toFixed(0)
    } MiB`
  )
  console.log(`  baseline tar -c | tar -x + sync: ${seconds(tarMs)} (${rate(diskBytes, tarMs)})`)

  // 2. Change 1% of the bytes: 8 MiB overwritten inside one large file, 100 small files rewritten.
  const big = NodeFs.openSync(NodePath.join(disk, "root", "large1.bin"), "r+")
  NodeFs.writeSync(big, NodeCrypto.randomBytes(8 * MiB), 0, 8 * MiB, 100 * MiB)
  NodeFs.closeSync(big)
  let changed = 8 * MiB
  for (let i = 0; i < smallFiles; i += smallFiles / 100) {
    const path = NodePath.join(disk, "workspace", "src", `d${i % 100}`, `f${i}.txt`)
    const size = NodeFs.statSync(path).size
    NodeFs.writeFileSync(path, NodeCrypto.randomBytes(size))
    changed += size
  }
  const second = await push()
  const stored = second.snapshot.uploaded_bytes / second.snapshot.size_bytes
  console.log(
    `incremental push after changing ${(100 * changed / diskBytes).toFixed(2)}% of the bytes: ${seconds(second.ms)} ` +
      `(${(100 * second.ms / first.ms).toFixed(1)}% of the first push; target <= 20%), stored ${
        (second.snapshot.uploaded_bytes / MiB).toFixed(1)
      } MiB ` +
      `= ${(100 * stored).toFixed(2)}% of the disk (target <= 5%), generation ${second.snapshot.generation}`
  )

  // 3. Restore against cp -a.
  const cpTarget = NodePath.join(scratch, "cp")
  const cpMs = await timed(() => shell(`cp -a ${disk} ${cpTarget} && sync -f ${cpTarget}`))
  NodeFs.rmSync(cpTarget, { recursive: true, force: true })
  fresh()
  const restoreStart = performance.now()
  const restored = await client.call("POST", `/v1/machines/${made.machine_id}/restore`, {
    name: "bench-restored",
    start: false
  })
  if (restored.status !== 202) throw new Error(JSON.stringify(restored.body))
  const operation = await settled(client, restored.body.operation_id, 20)
  const restoreMs = performance.now() - restoreStart
  if (operation.status !== "succeeded") throw new Error(JSON.stringify(operation))
  console.log(`restore to a new machine: ${seconds(restoreMs)} (${rate(diskBytes, restoreMs)})`)
  console.log(`  baseline cp -a + sync: ${seconds(cpMs)} (${rate(diskBytes, cpMs)})`)

  // Fork of the stopped machine (a plain copy) for comparison.
  fresh()
  const forkStart = performance.now()
  const forked = await client.call("POST", `/v1/machines/${made.machine_id}/fork`, { name: "bench-fork", start: false })
  const forkOperation = await settled(client, forked.body.operation_id, 20)
  if (forkOperation.status !== "succeeded") throw new Error(JSON.stringify(forkOperation))
  const forkMs = performance.now() - forkStart
  console.log(`fork (stopped source): ${seconds(forkMs)} (${rate(diskBytes, forkMs)})`)
} finally {
  client.close()
  await served.stop()
  NodeFs.rmSync(scratch, { recursive: true, force: true })
  NodeChild.execFileSync(process.execPath, ["--import", "tsx", "bench/cleanup.ts", served.dataDir], {
    stdio: "inherit"
  })
}
