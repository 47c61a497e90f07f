/**
 * Shared pieces of the benchmarks: a real `svc serve` process on a loopback port (so the load
 * generator does not share its event loop), a keep-alive HTTP client, and percentiles.
 * Every bench prints its figures and a baseline measured in the same run.
 */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeNet from "node:net"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Pool } from "undici"
import { readOutbox } from "../src/kernel/mail/Outbox.js"

/**
 * The product as `npm start` runs it: the bundle through its launcher, dist/svc (built here first).
 * SVC_BENCH_BIN names another node entry instead (bin/svc.mjs: the sources through tsx).
 */
const customBin = process.env.SVC_BENCH_BIN
if (customBin === undefined) NodeChild.execFileSync(process.execPath, ["bin/build.mjs"], { stdio: "inherit" })
// SVC_BENCH_NODE_ARGS reach the server only (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
const nodeArgs = (process.env.SVC_BENCH_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "")
const svcCommand = (args: ReadonlyArray<string>): [string, Array<string>, Record<string, string>] =>
  customBin === undefined
    ? [NodePath.resolve("dist/svc"), [...args], { NODE_OPTIONS: nodeArgs.join(" ") }]
    : [process.execPath, [...nodeArgs, NodePath.resolve(customBin), ...args], {}]

export const tempDir = (prefix: string) => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), `svc-bench-${prefix}-`))

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = NodeNet.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as NodeNet.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

export interface Served {
  readonly url: string
  readonly child: NodeChild.ChildProcess
  readonly dataDir: string
  readonly apiKey: string
  readonly stop: () => Promise<void>
}

/** Starts `svc serve` on a fresh data dir and bootstraps an owner with a full-access key. */
export const serve = async (env: Record<string, string> = {}): Promise<Served> => {
  const dataDir = tempDir("data")
  const port = await freePort()
  const [command, serveArgs, launchEnv] = svcCommand(["serve"])
  const fullEnv = {
    ...process.env,
    ...launchEnv,
    SVC_DATA_DIR: dataDir,
    SVC_PORT: String(port),
    SVC_LOG_LEVEL: "info",
    SVC_BILLING: "unlimited",
    ...env
  }
  const child = NodeChild.spawn(command, serveArgs, {
    env: fullEnv,
    stdio: ["ignore", "ignore", "pipe"]
  })
  await new Promise<void>((resolve, reject) => {
    let stderr = ""
    child.stderr!.on("data", (chunk) => {
      stderr += chunk
      if (stderr.includes("Listening on")) resolve()
    })
    child.on("exit", (code) => reject(new Error(`svc serve exited ${code}: ${stderr}`)))
  })
  const [bootCommand, bootArgs] = svcCommand(["admin", "bootstrap", "--email", "bench@example.com"])
  const boot = NodeChild.execFileSync(bootCommand, bootArgs, { env: { ...fullEnv, NODE_OPTIONS: "" } })
  const apiKey = JSON.parse(boot.toString()).api_key as string
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    dataDir,
    apiKey,
    stop: () =>
      new Promise<void>((resolve) => {
        child.on("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}

/** A keep-alive client with `connections` sockets. */
export const httpClient = (served: Served, connections = 64) => {
  const pool = new Pool(served.url, { connections, pipelining: 1 })
  const call = async (method: "GET" | "POST" | "DELETE", path: string, json?: unknown) => {
    const response = await pool.request({
      method,
      path,
      headers: {
        authorization: `Bearer ${served.apiKey}`,
        ...(json === undefined ? {} : { "content-type": "application/json" })
      },
      body: json === undefined ? null : JSON.stringify(json)
    })
    const text = await response.body.text()
    return { status: response.statusCode, body: text.length > 0 ? JSON.parse(text) : undefined }
  }
  return { call, close: () => pool.close() }
}

export type Client = ReturnType<typeof httpClient>

/** `0` yields to the event loop only (setImmediate), for tight polling. */
export const sleep = (ms: number) =>
  new Promise<void>((resolve) => ms === 0 ? setImmediate(resolve) : setTimeout(resolve, ms))

/** CPU time (user + system) a process has used so far, in milliseconds, from /proc. */
export const cpuMillis = (pid: number) => {
  // Fields 14 and 15 of /proc/<pid>/stat, after the command name (which may hold spaces).
  const fields = NodeFs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

/** Resident memory of a process, from /proc. */
export const rssMiB = (pid: number) => {
  const status = NodeFs.readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN)
  return kb / 1024
}

const terminal = new Set(["succeeded", "failed", "correlation_miss"])

/** Polls an operation until it is terminal (1 ms apart, to measure round trips closely). */
export const settled = async (client: Client, operationId: string, intervalMs = 1): Promise<any> => {
  while (true) {
    const reply = await client.call("GET", `/v1/operations/${operationId}`)
    if (terminal.has(reply.body.status)) return reply.body
    await sleep(intervalMs)
  }
}

/**
 * Waits for an operation through its event stream (GET /v1/operations/{id}/events, which ends
 * after `end`), as a client that does not poll would.
 */
export const awaitEnd = async (served: Served, pool: Pool, operationId: string) => {
  const response = await pool.request({
    method: "GET",
    path: `/v1/operations/${operationId}/events`,
    headers: { authorization: `Bearer ${served.apiKey}` }
  })
  const text = await response.body.text()
  if (!text.includes("event: end")) throw new Error(`no end event for ${operationId}: ${text}`)
}

export const createMachine = async (client: Client, name: string, body: Record<string, unknown> = {}) => {
  const accepted = await client.call("POST", "/v1/machines", { name, ...body })
  if (accepted.status !== 202) throw new Error(`create ${name}: ${accepted.status} ${JSON.stringify(accepted.body)}`)
  return accepted.body as { machine_id: string; operation_id: string }
}

export const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

export const summary = (samples: ReadonlyArray<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN }
}

export const ms = (value: number) => `${value.toFixed(2)} ms`

/** Runs `work` over `items` with at most `concurrency` at once. */
export const pool = async <A>(items: ReadonlyArray<A>, concurrency: number, work: (item: A) => Promise<void>) => {
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await work(items[next++]!)
  }))
}

/** Signs `email` in by its mailed code (svc's outbox): the session's cookies, for a browser context. */
export const sessionCookies = async (served: Served, email: string) => {
  await fetch(`${served.url}/v1/auth/email/start`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email })
  })
  let mail: { readonly text: string } | undefined
  while (mail === undefined) {
    const mails = await Effect.runPromise(readOutbox(NodePath.join(served.dataDir, "outbox")))
    mail = mails.filter((message) => message.to === email).at(-1)
    if (mail === undefined) await sleep(50)
  }
  const code = /sign-in code is (\d{6})/.exec(mail.text)![1]
  const verified = await fetch(`${served.url}/v1/auth/email/verify`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, code })
  })
  return verified.headers.getSetCookie().map((line) => {
    const [pair] = line.split(";")
    const [name, ...value] = pair!.split("=")
    return { name: name!.trim(), value: value.join("=").trim(), url: served.url }
  })
}
