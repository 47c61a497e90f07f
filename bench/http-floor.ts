/**
 * The floor of the HTTP stack on this machine: requests per second, latency and server CPU per
 * request of three servers that answer svc's stop route with a 202 and do nothing else
 * (bench/floor/servers.ts): node:http (the baseline), @effect/platform's HttpRouter, and an HttpApi
 * endpoint served the way svc serves its API. The load is bench/accepts.ts's: the same keep-alive
 * client, request and number of connections.
 * It tells how far svc's accept rate (bench/accepts.ts) can go on this stack before any of svc's own
 * work: a server cannot accept faster than its framework answers an empty handler.
 *
 *   node --import tsx bench/http-floor.ts [requests=20000] [connections=64]
 *
 * The servers are bundled and run with the node settings of dist/svc, as the product is.
 */
import { build } from "esbuild"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { Pool } from "undici"
import { esmBundle } from "../bin/esbuild-options.mjs"
import { cpuMillis, ms, pool, summary, tempDir } from "./support.js"

const total = Number(process.argv[2] ?? 20_000)
const connections = Number(process.argv[3] ?? 64)
// As dist/svc runs node (bin/build.mjs): SVC_NODE_FLAGS, none by default.
const nodeFlags = (process.env.SVC_NODE_FLAGS ?? "")
  .split(" ")
  .filter((flag) => flag !== "")

const bundle = async (dir: string) => {
  const outfile = NodePath.join(dir, "servers.mjs")
  await build({ ...esmBundle, entryPoints: [NodePath.resolve("bench/floor/servers.ts")], outfile, logLevel: "warning" })
  return outfile
}

const start = (file: string, kind: string) =>
  new Promise<{ child: NodeChild.ChildProcess; url: string }>((resolve, reject) => {
    const child = NodeChild.spawn(process.execPath, [...nodeFlags, file, kind], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout!.on("data", (chunk) => {
      out += chunk
      const port = /PORT (\d+)/.exec(out)?.[1]
      if (port !== undefined) resolve({ child, url: `http://127.0.0.1:${port}` })
    })
    child.on("exit", (code) => reject(new Error(`${kind} server exited ${code}`)))
  })

const load = async (client: Pool, requests: number) => {
  const latencies: Array<number> = []
  await pool(Array.from({ length: requests }, (_, i) => `m${i % 50}`), connections, async (id) => {
    const t0 = performance.now()
    const response = await client.request({
      method: "POST",
      path: `/v1/machines/${id}/stop`,
      headers: { authorization: "Bearer svc_floor", "content-type": "application/json" },
      body: "{}"
    })
    await response.body.text()
    if (response.statusCode !== 202) throw new Error(`answered ${response.statusCode}`)
    latencies.push(performance.now() - t0)
  })
  return latencies
}

const measure = async (file: string, kind: string) => {
  const { child, url } = await start(file, kind)
  const client = new Pool(url, { connections, pipelining: 1 })
  try {
    await load(client, Math.min(total, 5_000))
    const cpuBefore = cpuMillis(child.pid!)
    const started = performance.now()
    const latencies = await load(client, total)
    const seconds = (performance.now() - started) / 1000
    return { rate: total / seconds, latency: summary(latencies), cpu: (cpuMillis(child.pid!) - cpuBefore) / total }
  } finally {
    await client.close()
    child.kill("SIGKILL")
  }
}

const main = async () => {
  const dir = tempDir("floor")
  try {
    const file = await bundle(dir)
    console.log(`${total} requests over ${connections} connections, node ${nodeFlags.join(" ")}`)
    const results: Record<string, Awaited<ReturnType<typeof measure>>> = {}
    for (const kind of ["node", "router", "api"]) {
      const result = await measure(file, kind)
      results[kind] = result
      console.log(
        `${kind.padEnd(7)} ${result.rate.toFixed(0).padStart(6)} req/s   p50 ${ms(result.latency.p50)}   p99 ${
          ms(result.latency.p99)
        }   server CPU ${(result.cpu * 1000).toFixed(0)} µs/request`
      )
    }
    const node = results.node!
    console.log(
      `ratio to node:http  router ${(results.router!.rate / node.rate).toFixed(2)}  api ${
        (results.api!.rate / node.rate).toFixed(2)
      } (rate); CPU per request ${(results.router!.cpu / node.cpu).toFixed(1)}x and ${
        (results.api!.cpu / node.cpu).toFixed(1)
      }x`
    )
  } finally {
    NodeFs.rmSync(dir, { recursive: true, force: true })
  }
}

await main()
