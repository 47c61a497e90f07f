/**
 * 1,000 sandboxed machines with 5 operations each, submitted at once: total time until all 5,000
 * are terminal, and proof that a machine busy with a 5 s exec delays no other (each machine's
 * actor takes its own mailbox; none waits for another). Baseline, same run: the time one machine
 * alone takes for the same 5 operations.
 *
 *   node --import tsx bench/fanout.ts [machines=1000]
 */
import * as NodeChild from "node:child_process"
import { performance } from "node:perf_hooks"
import { createMachine, httpClient, ms, pool, serve, settled, sleep, summary } from "./support.js"

const machineCount = Number(process.argv[2] ?? 1000)
const opsPerMachine = 5

const main = async () => {
  // Every machine runs at once: more than the host's default share (memory / 64 MiB) may allow.
  const served = await serve({
    SVC_RUNTIME: "sandbox",
    SVC_BILLING: "unlimited",
    SVC_HOST_MAX_RUNNING: String(machineCount + 1)
  })
  const client = httpClient(served, 64)
  try {
    const setupStart = performance.now()
    const machines: Array<string> = []
    await pool(Array.from({ length: machineCount }, (_, i) => i), 64, async (i) => {
      const created = await createMachine(client, `m${i}`)
      await settled(client, created.operation_id, 20)
      machines.push(created.machine_id)
    })
    const setupSeconds = (performance.now() - setupStart) / 1000

    // Baseline: one machine alone, the same five execs.
    const alone = machines[1]!
    const aloneStart = performance.now()
    for (let i = 0; i < opsPerMachine; i++) {
      const accepted = await client.call("POST", `/v1/machines/${alone}/exec`, { command: ["true"] })
      await settled(client, accepted.body.operation_id, 0)
    }
    const aloneMs = performance.now() - aloneStart

    const slow = machines[0]!
    const submitted = performance.now()
    const finished = new Map<string, number>()
    /** Server-side: from acceptance to terminal of each machine's last operation (created_at to finished_at). */
    const lastOpMs = new Map<string, number>()
    const accepted: Array<{ machine: string; operation: string }> = []
    await pool(
      machines.flatMap((m) => Array.from({ length: opsPerMachine }, (_, n) => ({ m, n }))),
      64,
      async ({ m, n }) => {
        const command = m === slow && n === 0 ? ["sleep", "5"] : ["true"]
        const reply = await client.call("POST", `/v1/machines/${m}/exec`, { command })
        if (reply.status !== 202) throw new Error(`exec: ${reply.status} ${JSON.stringify(reply.body)}`)
        accepted.push({ machine: m, operation: reply.body.operation_id })
      }
    )
    const acceptedMs = performance.now() - submitted
    // Wait per machine for its last operation (operations of one machine settle in order).
    const lastOf = new Map<string, string>()
    for (const { machine, operation } of accepted) lastOf.set(machine, operation)
    await pool([...lastOf], 32, async ([machine, operation]) => {
      while (true) {
        const reply = await client.call("GET", `/v1/operations/${operation}`)
        if (["succeeded", "failed", "correlation_miss"].includes(reply.body.status)) {
          lastOpMs.set(machine, Date.parse(reply.body.finished_at) - Date.parse(reply.body.created_at))
          break
        }
        await sleep(25)
      }
      finished.set(machine, performance.now() - submitted)
    })
    const totalMs = Math.max(...finished.values())
    const others = summary([...finished].filter(([m]) => m !== slow).map(([, t]) => t)) // client clock
    console.log(`setup: ${machineCount} sandboxed machines created and running in ${setupSeconds.toFixed(1)} s`)
    console.log(
      `${machineCount * opsPerMachine} operations accepted in ${ms(acceptedMs)}, all terminal after ${ms(totalMs)}`
    )
    console.log(`machine with the 5 s exec done after ${ms(finished.get(slow)!)}`)
    console.log(`every other machine done: p50 ${ms(others.p50)}   p99 ${ms(others.p99)}   max ${ms(others.max)}`)
    console.log(`baseline, one machine alone, 5 execs: ${ms(aloneMs)}`)
    const othersLast = summary([...lastOpMs].filter(([m]) => m !== slow).map(([, t]) => t))
    console.log(
      `last operation, accepted to terminal (server clock): slow machine ${ms(lastOpMs.get(slow)!)}; ` +
        `others p50 ${ms(othersLast.p50)} p99 ${ms(othersLast.p99)} max ${ms(othersLast.max)}`
    )
    // What ran while the slow exec ran: were machines served from one queue, no other machine's
    // operation would end between its start and its end. On a host with more work than it can
    // carry out, operations queue for all machines alike; the rate at which the others' end while the
    // slow one runs is compared with the rate of the whole run.
    const operations = (await Promise.all(
      machines.map((m) => client.call("GET", `/v1/machines/${m}/operations?limit=100`))
    )).flatMap((reply) => reply.body.items as Array<Record<string, string>>)
    const slowExec = operations.find((op) => op.id === accepted.find((a) => a.machine === slow)!.operation)!
    const [from, to] = [Date.parse(slowExec.started_at!), Date.parse(slowExec.finished_at!)]
    const endedMeanwhile = operations.filter((op) =>
      op.machine_id !== slow && Date.parse(op.finished_at!) >= from && Date.parse(op.finished_at!) <= to
    ).length
    const rateMeanwhile = endedMeanwhile / ((to - from) / 1000)
    const rateOverall = (machineCount * opsPerMachine) / (totalMs / 1000)
    console.log(
      `while the slow machine's 5 s exec ran (${
        to - from
      } ms): ${endedMeanwhile} operations of other machines ended, ` +
        `${rateMeanwhile.toFixed(0)}/s (whole run: ${rateOverall.toFixed(0)}/s)`
    )
    console.log(
      `no other machine waited for the slow one: ${rateMeanwhile >= rateOverall / 2 ? "yes" : "NO"} ` +
        `(every other machine's last operation ended sooner than the slow machine's: ${
          othersLast.max < lastOpMs.get(slow)! ? "yes" : "no"
        })`
    )
  } finally {
    await client.close()
    await served.stop()
    NodeChild.execFileSync(process.execPath, ["--import", "tsx", "bench/cleanup.ts", served.dataDir])
  }
}

await main()
