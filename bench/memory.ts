/**
 * Resident memory of the svc process with 10,000 stopped machines and 200 idle running ones.
 * Baseline, same run: the same process just started with no machines. Idle machines cost svc no
 * fiber: an actor lives only while its machine has operations, so this measures what really stays.
 *
 * Each figure is read twice: right after (2 s after the last create), and settled, once the idle
 * process has given back what the burst left behind (V8 collects and returns its heap when the
 * allocation rate falls; that took 10-45 s here). Settled is the figure of the target: the
 * machines are idle then; right after is the peak a host must have room for.
 *
 *   node --import tsx bench/memory.ts [stopped=10000] [running=200]
 */
import * as NodeChild from "node:child_process"
import { createMachine, httpClient, pool, rssMiB, serve, settled, sleep } from "./support.js"

const stopped = Number(process.argv[2] ?? 10_000)
const running = Number(process.argv[3] ?? 200)
const sampleMs = 2_500
const settleLimitMs = 180_000

/**
 * Samples the resident set until it has stopped falling: 10 s without a new low after having fallen
 * by a tenth, or 90 s without falling at all, or the limit. Answers the first sample, the lowest,
 * and when that low was first seen.
 */
const settle = async (pid: number) => {
  const first = rssMiB(pid)
  let low = first
  let lowAt = 0
  for (let elapsed = sampleMs; elapsed <= settleLimitMs; elapsed += sampleMs) {
    await sleep(sampleMs)
    const now = rssMiB(pid)
    if (now < low - 0.5) {
      low = now
      lowAt = elapsed
    }
    const quiet = elapsed - lowAt
    if ((low < first * 0.9 && quiet >= 10_000) || (lowAt === 0 && quiet >= 90_000)) break
  }
  return { first, low, seconds: lowAt / 1000 }
}

const main = async () => {
  const served = await serve({ SVC_RUNTIME: "sandbox", SVC_BILLING: "unlimited" })
  const client = httpClient(served, 32)
  try {
    await sleep(500)
    const empty = await settle(served.child.pid!)
    await pool(Array.from({ length: stopped + running }, (_, i) => i), 32, async (i) => {
      const created = await createMachine(client, `m${i}`, { start: i >= stopped })
      await settled(client, created.operation_id, 20)
    })
    const list = await client.call("GET", "/v1/machines?limit=100")
    if (list.body.items.length !== 100) throw new Error("listing failed")
    await sleep(2000)
    const loaded = await settle(served.child.pid!)
    const line = (figures: typeof empty) =>
      `${figures.first.toFixed(1)} MiB right after, ${
        figures.low.toFixed(1)
      } MiB settled (after ${figures.seconds} s idle)`
    console.log(`svc resident memory, no machines:                    ${line(empty)}`)
    console.log(`svc resident memory, ${stopped} stopped + ${running} running: ${line(loaded)}`)
    console.log(`ratio settled: ${(loaded.low / empty.low).toFixed(2)}   target: at most 150 MB (143 MiB)`)
  } finally {
    await client.close()
    await served.stop()
    NodeChild.execFileSync(process.execPath, ["--import", "tsx", "bench/cleanup.ts", served.dataDir])
  }
}

await main()
