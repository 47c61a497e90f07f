/**
 * Keystroke echo latency through svc: one byte sent on a terminal's WebSocket until its echo comes
 * back (the PTY's line discipline echoes it inside the sandbox), p50 and p99, on the sandbox driver.
 * Baseline, same run, same machine: the same PTY (the launcher's, made inside the same sandbox)
 * driven locally by this process through nsenter, with no HTTP, WebSocket or svc in the way.
 * Target: p50 within 1 ms of the baseline, p99 under 10 ms.
 *
 *   node --import tsx bench/terminal-echo.ts [keystrokes=2000]
 *
 * With `NODE_PTY=<path of a built node-pty>` (not a dependency of svc: the alternative that was
 * weighed, docs/terminals.md) it also drives a node-pty PTY made in this process around nsenter
 * into the same sandbox, and times its spawn call (the event loop stands still meanwhile) against
 * the launcher's terminal start.
 */
import { Effect, Queue } from "effect"
import * as NodeFs from "node:fs"
import { createRequire } from "node:module"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { WebSocket } from "ws"
import { spawnLauncher } from "../src/drivers/launcher/Launcher.js"
import { launcherScript } from "../src/drivers/launcher/Script.js"
import type { TerminalInput } from "../src/drivers/MachineDriver.js"
import { createMachine, httpClient, ms, serve, settled, summary } from "./support.js"

const keystrokes = Number(process.argv[2] ?? 2000)
const warmup = 200

/** Sends one key at a time and times until its echo arrives. */
const measure = async (send: (key: Buffer) => void, onEcho: (listener: () => void) => void) => {
  const samples: Array<number> = []
  let waiting: (() => void) | undefined
  onEcho(() => waiting?.())
  for (let i = -warmup; i < keystrokes; i++) {
    const t0 = performance.now()
    await new Promise<void>((resolve) => {
      waiting = resolve
      send(Buffer.from("a"))
    })
    if (i >= 0) samples.push(performance.now() - t0)
    // A line now and then, so the PTY's line buffer (4095 bytes) never fills.
    if (i % 1000 === 999) {
      await new Promise<void>((resolve) => {
        waiting = resolve
        send(Buffer.from("\x15"))
      })
    }
  }
  return summary(samples)
}

const main = async () => {
  const served = await serve({ SVC_RUNTIME: "sandbox" })
  const client = httpClient(served, 4)
  try {
    const created = await createMachine(client, "echo", { internet_access: false })
    await settled(client, created.operation_id, 5)
    const id = created.machine_id

    // Through svc: the ticket, then the WebSocket.
    const ticket = await client.call("POST", `/v1/machines/${id}/terminals`, { command: ["cat"] })
    if (ticket.status !== 201) throw new Error(`ticket: ${ticket.status} ${JSON.stringify(ticket.body)}`)
    const ws = new WebSocket(ticket.body.url)
    await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)))
    const throughSvc = await measure(
      (key) => ws.send(key, { binary: true }),
      (listener) => ws.on("message", (_data, binary) => binary && listener())
    )
    ws.close()

    // Locally: the same launcher PTY in the same sandbox, entered with nsenter by this process.
    const run = JSON.parse(NodeFs.readFileSync(NodePath.join(served.dataDir, "machines", id, "run.json"), "utf8"))
    const launcher = spawnLauncher(
      ["nsenter", `--target=${run.pid}`, "--all", "--root", "--wdns=/", "--", "/usr/bin/perl", "-e", launcherScript],
      NodePath.join(served.dataDir, "bench-launcher.log")
    )
    const input = Effect.runSync(Queue.unbounded<TerminalInput>())
    let listener = () => undefined as void
    const running = Effect.runPromise(launcher.run(
      {
        argv: ["cat"],
        cwd: "/",
        env: { PATH: "/usr/bin:/bin", TERM: "xterm" },
        input,
        terminal: { cols: 80, rows: 24 }
      },
      () => Effect.sync(() => listener())
    ))
    const local = await measure(
      (key) => Queue.unsafeOffer(input, key),
      (next) => void (listener = next)
    )
    Queue.unsafeOffer(input, Buffer.from("\x04"))
    await running
    // The launcher's terminal start, for the spawn comparison: frame sent until the first echo.
    const starts: Array<number> = []
    for (let i = 0; i < 20; i++) {
      const queue = Effect.runSync(Queue.unbounded<TerminalInput>())
      const t0 = performance.now()
      let first: (() => void) | undefined
      const started = new Promise<void>((resolve) => (first = resolve))
      const done = Effect.runPromise(launcher.run(
        { argv: ["cat"], cwd: "/", env: { PATH: "/usr/bin:/bin" }, input: queue, terminal: { cols: 80, rows: 24 } },
        () => Effect.sync(() => first?.())
      ))
      Queue.unsafeOffer(queue, Buffer.from("a"))
      await started
      starts.push(performance.now() - t0)
      Queue.unsafeOffer(queue, Buffer.from("\n\x04"))
      await done
    }
    launcher.close()

    let nodePty: string | undefined
    if (process.env.NODE_PTY !== undefined) {
      const pty = createRequire(import.meta.url)(process.env.NODE_PTY) as {
        spawn: (file: string, args: Array<string>, options: object) => {
          write: (data: string) => void
          onData: (listener: (data: string) => void) => void
          kill: () => void
        }
      }
      const spawnBlocks: Array<number> = []
      let last: ReturnType<typeof pty.spawn> | undefined
      for (let i = 0; i < 20; i++) {
        last?.kill()
        const t0 = performance.now()
        last = pty.spawn("nsenter", [`--target=${run.pid}`, "--all", "--root", "--wdns=/", "--", "cat"], {
          cols: 80,
          rows: 24,
          env: { PATH: "/usr/bin:/bin" }
        })
        spawnBlocks.push(performance.now() - t0)
      }
      const term = last!
      await new Promise((resolve) => setTimeout(resolve, 300))
      const viaNodePty = await measure((key) => term.write(key.toString()), (listener) => term.onData(() => listener()))
      term.kill()
      nodePty = `  node-pty in svc's process, same sandbox via nsenter: p50 ${ms(viaNodePty.p50)}  p99 ${
        ms(viaNodePty.p99)
      }; its spawn call blocks the event loop p50 ${
        ms(summary(spawnBlocks).p50)
      } (this small process; svc's heap makes a fork slower)`
    }

    console.log(`terminal keystroke echo, ${keystrokes} keys, sandbox driver`)
    console.log(
      `  through svc (HTTP ticket, WebSocket): p50 ${ms(throughSvc.p50)}  p99 ${ms(throughSvc.p99)}  max ${
        ms(throughSvc.max)
      }`
    )
    console.log(
      `  local, same PTY (launcher via nsenter): p50 ${ms(local.p50)}  p99 ${ms(local.p99)}  max ${ms(local.max)}`
    )
    console.log(
      `  p50 difference ${ms(throughSvc.p50 - local.p50)} (target < 1 ms); p99 ${ms(throughSvc.p99)} (target < 10 ms)`
    )
    console.log(`  ratio p50 svc/local ${(throughSvc.p50 / local.p50).toFixed(2)}`)
    console.log(
      `  launcher terminal start (frame to first echo): p50 ${ms(summary(starts).p50)}, svc's event loop never blocked`
    )
    if (nodePty !== undefined) console.log(nodePty)
  } finally {
    await served.stop()
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
