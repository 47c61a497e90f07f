/**
 * What machine networking costs (docs/drivers.md "Network"), on the sandbox driver, as root:
 *
 * 1. Create to running through the API (POST to `end` on the operation's event stream), with
 *    internet access off and on, alternated. Baseline, same run: the machine's boot command spawned
 *    directly (bwrap up to its first process's ready byte), as it was before machines had a
 *    network of svc's making (bwrap's own namespace) and as it is now without and with internet,
 *    through the spawner as the driver starts them.
 * 2. Download throughput from an outside host (a network namespace of the bench's own, veth,
 *    198.51.100.0/24): `curl` in a machine with internet access against the host's own `curl` of
 *    the same URL, alternated. Needs curl on the host (machines see the host's /usr).
 *
 *   node --import tsx bench/network.ts [creates=40] [MiB=512] [downloads=3]
 */
import { Effect, Exit, Scope } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { Pool } from "undici"
import { bwrapArgs } from "../src/drivers/sandbox/Bwrap.js"
import * as Network from "../src/drivers/sandbox/Network.js"
import { hostSpawner, type SandboxStart } from "../src/drivers/sandbox/Spawner.js"
import { outsideHost } from "../test/support/OutsideHost.js"
import { awaitEnd, createMachine, httpClient, ms, serve, settled, summary, tempDir } from "./support.js"

const creates = Number(process.argv[2] ?? 40)
const mib = Number(process.argv[3] ?? 512)
const downloads = Number(process.argv[4] ?? 3)

const which = (name: string) => NodeChild.execFileSync("/bin/sh", ["-c", `command -v ${name}`]).toString().trim()
const tools: Network.NetTools = {
  unshare: which("unshare"),
  ip: which("ip"),
  slirp4netns: which("slirp4netns"),
  nft: which("nft")
}

const spawner = hostSpawner(which("perl"))

/**
 * One boot through the spawner, as the driver does: until the machine's first process runs (its
 * ready byte), then its pid 1 is killed. Answers the milliseconds.
 */
const bootOnce = (start: Pick<SandboxStart, "argv" | "afterNetns" | "netJob">, logFile: string) =>
  new Promise<number>((resolve, reject) => {
    const t0 = performance.now()
    spawner.start({ ...start, env: { PATH: "/usr/bin:/bin" }, logFile, groups: [] }, {
      spawned: () => undefined,
      ready: (pid) => {
        const took = performance.now() - t0
        process.kill(pid, "SIGKILL")
        resolve(took)
      },
      failed: (reason) => reject(new Error(`${reason}: ${NodeFs.readFileSync(logFile, "utf8")}`))
    })
  })

const bootCommands = () => {
  const dir = tempDir("netboot")
  for (const folder of ["root", "home", "tmp", "var/tmp", "opt", "srv", "workspace"]) {
    NodeFs.mkdirSync(NodePath.join(dir, "disk", folder), { recursive: true })
  }
  const paths = Network.netPaths(dir)
  Network.writeFiles(paths, Network.defaultSettings)
  const bwrap = [
    which("bwrap"),
    ...bwrapArgs({
      diskDir: NodePath.join(dir, "disk"),
      hostname: "svc-bench",
      resolvConf: paths.resolvConf,
      resolvTarget: Network.resolvConfTarget(),
      infoFd: 3,
      readyFd: 4
    })
  ]
  const command = (internet: boolean) => {
    const made = Network.bootCommand(tools, Network.defaultSettings, paths, internet, bwrap)
    if (typeof made === "string") throw new Error(made)
    return made
  }
  return {
    dir,
    paths,
    log: NodePath.join(dir, "sandbox.log"),
    // Before: bwrap made the machine's network namespace itself (--unshare-all without --share-net).
    before: { argv: bwrap.filter((arg) => arg !== "--share-net") },
    offline: command(false),
    online: command(true)
  }
}

const bootBaseline = async () => {
  const commands = bootCommands()
  const samples = { before: [] as Array<number>, offline: [] as Array<number>, online: [] as Array<number> }
  for (let i = -3; i < creates; i++) {
    for (const kind of ["before", "offline", "online"] as const) {
      const took = await bootOnce(commands[kind], commands.log)
      // The online boot's slirp4netns outlives the sandbox: end it, as a stop does.
      Network.killSlirp(commands.paths)
      if (i >= 0) samples[kind].push(took)
    }
  }
  NodeFs.rmSync(commands.dir, { recursive: true, force: true })
  return samples
}

const apiCreates = async () => {
  const served = await serve({ SVC_RUNTIME: "sandbox" })
  const client = httpClient(served, 4)
  const events = new Pool(served.url, { connections: 2 })
  try {
    const samples = { off: [] as Array<number>, on: [] as Array<number> }
    for (let i = -3; i < creates; i++) {
      for (const internet of [false, true]) {
        const t0 = performance.now()
        const created = await createMachine(client, `n${i}-${internet}`, { internet_access: internet })
        await awaitEnd(served, events, created.operation_id)
        if (i >= 0) samples[internet ? "on" : "off"].push(performance.now() - t0)
      }
    }
    const check = await createMachine(client, "check", { internet_access: true })
    if ((await settled(client, check.operation_id)).status !== "succeeded") throw new Error("a create did not succeed")
    return { samples, served, client }
  } finally {
    await events.close()
  }
}

const curl = (url: string) => ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download}", url]

const main = async () => {
  // The spawner and its pipes do not keep node running (they must not keep svc running).
  const keepAlive = setInterval(() => undefined, 1_000)
  const baseline = await bootBaseline()
  const { client, samples, served } = await apiCreates()
  const scope = Effect.runSync(Scope.make())
  try {
    const outside = await Effect.runPromise(Scope.extend(outsideHost, scope))
    const url = `http://${outside.address}/bytes/${mib * 1024 * 1024}`
    const machine = await createMachine(client, "download", { internet_access: true })
    await settled(client, machine.operation_id)
    const inMachine: Array<number> = []
    const onHost: Array<number> = []
    for (let i = 0; i < downloads; i++) {
      const exec = await client.call("POST", `/v1/machines/${machine.machine_id}/exec`, { command: curl(url) })
      const done = await settled(client, exec.body.operation_id, 20)
      inMachine.push(Number(Buffer.from(done.exec_result.stdout_base64, "base64").toString()))
      onHost.push(Number(NodeChild.execFileSync(curl(url)[0]!, curl(url).slice(1)).toString()))
    }
    const mb = (values: ReadonlyArray<number>) => values.map((value) => (value / 1e6).toFixed(0)).join(" / ")

    const line = (name: string, values: ReadonlyArray<number>) => {
      const { p50, p99 } = summary(values)
      console.log(`${name.padEnd(44)} p50 ${ms(p50)}   p99 ${ms(p99)}   (${values.length})`)
    }
    line("create to running, internet off (API)", samples.off)
    line("create to running, internet on (API)", samples.on)
    line("baseline: boot command, bwrap's own netns", baseline.before)
    line("baseline: boot command, svc's netns, offline", baseline.offline)
    line("baseline: boot command, svc's netns, online", baseline.online)
    console.log(`download ${mib} MiB from the outside host, MB/s: machine ${mb(inMachine)}   host curl ${mb(onHost)}`)
  } finally {
    clearInterval(keepAlive)
    spawner.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await client.close()
    await served.stop()
    // Machines outlive svc by design: end this run's.
    NodeChild.execFileSync(process.execPath, ["--import", "tsx", "bench/cleanup.ts", served.dataDir])
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
