/**
 * Resident memory of the svc process with 10,000 stopped machines and 200 idle running ones.
 * Baseline, same run: the same process just started with no machines. Idle machines cost svc no
 * fiber: an actor lives only while its machine has operations, so this measures what really stays.
 *
 *   node --import tsx bench/memory.ts [stopped=10000] [running=200]
 */
import * as NodeChild from "node:child_process"
import { createMachine, httpClient, pool, rssMiB, serve, settled, sleep } from "./support.js"

const stopped = Number(process.argv[2] ?? 10_000)
const running = Number(process.argv[3] ?? 200)

const main = async () => {
  const served = await serve({ SVC_RUNTIME: "sandbox", SVC_BILLING: "unlimited" })
  const client = httpClient(served, 32)
  try {
    await sleep(500)
    const empty = rssMiB(served.child.pid!)
    await pool(Array.from({ length: stopped + running }, (_, i) => i), 32, async (i) => {
      const created = await createMachine(client, `m${i}`, { start: i >= stopped })
      await settled(client, created.operation_id, 20)
    })
    const list = await client.call("GET", "/v1/machines?limit=100")
    if (list.body.items.length !== 100) throw new Error("listing failed")
    await sleep(2000)
    const loaded = rssMiB(served.child.pid!)
    console.log(`svc resident memory, no machines:                    ${empty.toFixed(1)} MiB`)
    console.log(`svc resident memory, ${stopped} stopped + ${running} running: ${loaded.toFixed(1)} MiB`)
    console.log(`ratio: ${(loaded / empty).toFixed(2)}   target: at most 150 MB`)
  } finally {
    await client.close()
    await served.stop()
    NodeChild.execFileSync(process.execPath, ["--import", "tsx", "bench/cleanup.ts", served.dataDir])
  }
}

await main()
