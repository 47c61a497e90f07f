/**
 * What isolation costs (docs/drivers.md "Isolation"), on the sandbox driver, as root, alternated
 * in one run: the same driver with isolation on (the machine's own user namespace and uid range,
 * locked read-only mounts, the idmapped disk, cgroups joined before the namespaces, seccomp) and
 * off (bwrap's own user namespace mapping the host's root, cgroups joined after the boot), both
 * through the spawner, with cgroups.
 *
 * 1. Create to running: `create` + `start` of a new machine (no internet access), until its first
 *    process runs.
 * 2. Exec round trip: `true` through the launcher (its first exec, which starts it, left out).
 *
 *   node --import tsx bench/isolation.ts [machines=20] [execs=50]
 */
import { Effect } from "effect"
import { performance } from "node:perf_hooks"
import type { MachineDriverShape } from "../src/drivers/MachineDriver.js"
import * as Cgroups from "../src/drivers/sandbox/Cgroups.js"
import * as SandboxDriver from "../src/drivers/sandbox/SandboxDriver.js"
import { hostSpawner } from "../src/drivers/sandbox/Spawner.js"
import { ms, summary, tempDir } from "./support.js"

const machines = Number(process.argv[2] ?? 20)
const execs = Number(process.argv[3] ?? 50)

const tools = Effect.runSync(SandboxDriver.checkTools)
const spawner = hostSpawner(tools.perl!)
const cgroups = Cgroups.detect()
const drivers = {
  isolated: SandboxDriver.make({ dataDir: tempDir("iso-on"), cgroups, tools, spawner, isolated: true }),
  plain: SandboxDriver.make({ dataDir: tempDir("iso-off"), cgroups, tools, spawner, isolated: false })
}

const spec = (id: string) => ({ id, size: "small" as const, image: "default", internetAccess: false, env: {} })
const timed = async (work: () => Promise<unknown>) => {
  const t0 = performance.now()
  await work()
  return performance.now() - t0
}

const boots: Record<keyof typeof drivers, Array<number>> = { isolated: [], plain: [] }
const rounds: Record<keyof typeof drivers, Array<number>> = { isolated: [], plain: [] }
const exec = (driver: MachineDriverShape, id: string) =>
  Effect.runPromise(driver.exec(id, { argv: ["/bin/true"] }, () => Effect.void))

for (let i = 0; i < machines; i++) {
  const order: ReadonlyArray<keyof typeof drivers> = i % 2 === 0 ? ["isolated", "plain"] : ["plain", "isolated"]
  for (const kind of order) {
    const driver = drivers[kind]
    const id = `bench-${kind}-${i}`
    boots[kind].push(
      await timed(() => Effect.runPromise(Effect.zipRight(driver.create(spec(id)), driver.start(spec(id)))))
    )
    await exec(driver, id)
    for (let n = 0; n < execs / machines; n++) rounds[kind].push(await timed(() => exec(driver, id)))
    await Effect.runPromise(driver.destroy(id))
  }
}
spawner.close()

for (const kind of ["plain", "isolated"] as const) {
  const b = summary(boots[kind])
  const r = summary(rounds[kind])
  console.log(
    `${kind.padEnd(8)} create to running p50 ${ms(b.p50)} p99 ${ms(b.p99)} | exec true p50 ${ms(r.p50)} p99 ${
      ms(r.p99)
    } (${boots[kind].length} boots, ${rounds[kind].length} execs)`
  )
}
