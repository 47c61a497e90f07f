/**
 * Webhook deliveries per second to a local receiver, with the outbox durable: each event's delivery
 * rows are written by the real recorder inside a group-commit transaction (flushed before it is
 * answered), then the sender signs and POSTs them through the SSRF guard (allow-private mode, plain
 * HTTP on loopback). Baseline, same run: plain `fetch` POSTs of the same bodies to the same
 * receiver with the same concurrency (16 in flight), no database, no signature.
 * Then the cost of a slow receiver: the latency (commit to receipt) of a fast endpoint's deliveries
 * alone, and again while another endpoint of the same organization answers after 5 s.
 *
 *   node --import tsx bench/webhooks.ts [events=10000]
 */
import { Context, Effect, Layer, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import type * as NodeNet from "node:net"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { servicesWith } from "../src/App.js"
import * as Drivers from "../src/drivers/Drivers.js"
import { Accounts } from "../src/identity/Accounts.js"
import { AppConfig } from "../src/kernel/config/AppConfig.js"
import { EventRecorders } from "../src/kernel/events/EventRecorders.js"
import { GroupCommit } from "../src/kernel/sql/GroupCommit.js"
import { Machines } from "../src/machines/Machines.js"
import { Webhooks } from "../src/webhooks/Webhooks.js"
import { WebhookSender } from "../src/webhooks/Worker.js"
import { testConfig } from "../test/support/TestServer.js"

const events = Number(process.argv[2] ?? 10_000)

interface Receiver {
  readonly url: string
  readonly times: Array<number>
  readonly close: () => void
}

const receiver = (delayMs: number) =>
  new Promise<Receiver>((resolve) => {
    const times: Array<number> = []
    const server = NodeHttp.createServer({ keepAliveTimeout: 60_000 }, (request, response) => {
      request.resume()
      request.on("end", () => {
        times.push(performance.now())
        if (delayMs === 0) response.end("ok")
        else setTimeout(() => response.end("ok"), delayMs)
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as NodeNet.AddressInfo).port}/hook`,
        times,
        close: () => {
          server.closeAllConnections()
          server.close()
        }
      }))
  })

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
}

const baseline = async (target: Receiver, bodies: ReadonlyArray<string>) => {
  const started = performance.now()
  let next = 0
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!
      const response = await fetch(target.url, {
        method: "POST",
        body,
        headers: { "content-type": "application/json" }
      })
      await response.text()
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
  return bodies.length / ((performance.now() - started) / 1000)
}

const program = Effect.gen(function*() {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-bench-webhooks-"))
  const config = testConfig(dir, 9, {
    secretKeys: { kind: "given", keys: [Redacted.make(NodeCrypto.randomBytes(32))] },
    webhookAllowPrivate: true
  })
  const context = yield* Layer.build(
    servicesWith(Drivers.layer).pipe(Layer.provideMerge(Layer.succeed(AppConfig, config)))
  )
  const made = yield* Context.get(context, Accounts).bootstrap("bench@example.com")
  const requester = { organizationId: made.organization_id, userId: made.user_id, idempotencyKey: undefined }
  const machine = yield* Context.get(context, Machines).create(requester, {
    name: "bench",
    size: "default",
    image: "default",
    environment_id: null,
    internet_access: true,
    auto_stop_seconds: null,
    idle_sleep_seconds: null,
    setup_script: null,
    template: null,
    start: false
  } as never)
  const webhooks = Context.get(context, Webhooks)
  const commit = Context.get(context, GroupCommit)
  const outbox = Context.get(context, EventRecorders)
  const sender = Context.get(context, WebhookSender)
  const event = {
    _tag: "MachineEvent",
    type: "machine.ready",
    machineId: machine.machine_id,
    organizationId: made.organization_id
  } as const

  /** Records `count` events, 64 transactions at a time (they share group commits); times each commit. */
  const burst = (count: number) =>
    Effect.forEach(
      Array.from({ length: count }),
      () => Effect.map(commit.transaction(outbox.record([event])), () => performance.now()),
      { concurrency: 64 }
    )

  const fast = yield* Effect.promise(() => receiver(0))
  const hook = yield* webhooks.create(made.organization_id, made.user_id, {
    name: "fast",
    url: fast.url,
    events: ["machine.ready"],
    enabled: true
  })
  // Warm up.
  yield* burst(500)
  yield* Effect.promise(() => until(() => fast.times.length >= 500))
  fast.times.length = 0

  const started = performance.now()
  yield* burst(events)
  const recorded = performance.now()
  yield* sender.wake
  yield* Effect.promise(() => until(() => fast.times.length >= events))
  const ended = performance.now()
  const seconds = (ended - started) / 1000
  const sending = (ended - recorded) / 1000
  const body = JSON.stringify({
    type: "machine.ready",
    timestamp: new Date().toISOString(),
    data: { id: machine.machine_id, padding: "x".repeat(900) }
  })
  const plain = yield* Effect.promise(() => baseline(fast, Array.from({ length: events }, () => body)))
  console.log(
    `deliveries: ${events} events recorded in ${(recorded - started).toFixed(0)} ms, all delivered in ${
      (seconds * 1000).toFixed(0)
    } ms: ${(events / seconds).toFixed(0)}/s (durable outbox, signed)`
  )
  console.log(
    `sending:    from the wake to the last receipt ${(sending * 1000).toFixed(0)} ms: ${
      (events / sending).toFixed(0)
    }/s; ${(events / sending / plain).toFixed(2)} x the baseline`
  )
  console.log(`baseline:   plain fetch POSTs of the same size, 16 in flight: ${plain.toFixed(0)}/s`)

  // Latency of the fast endpoint, alone and beside one answering in 5 s.
  const latency = (count: number) =>
    Effect.gen(function*() {
      fast.times.length = 0
      const committed = yield* burst(count)
      yield* sender.wake
      yield* Effect.promise(() => until(() => fast.times.length >= count))
      const lags = fast.times.map((t, i) => t - committed[i]!)
      return { p50: percentile(lags, 50), p99: percentile(lags, 99) }
    })
  const alone = yield* latency(2000)
  const slow = yield* Effect.promise(() => receiver(5000))
  yield* webhooks.create(made.organization_id, made.user_id, {
    name: "slow",
    url: slow.url,
    events: ["machine.ready"],
    enabled: true
  })
  const beside = yield* latency(2000)
  console.log(
    `fast endpoint latency, commit to receipt: alone p50 ${alone.p50.toFixed(1)} ms p99 ${alone.p99.toFixed(1)} ms; ` +
      `beside a 5 s receiver p50 ${beside.p50.toFixed(1)} ms p99 ${
        beside.p99.toFixed(1)
      } ms (slow one received ${slow.times.length})`
  )
  void hook
  fast.close()
  slow.close()
})

const until = async (check: () => boolean) => {
  const deadline = Date.now() + 120_000
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out")
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
