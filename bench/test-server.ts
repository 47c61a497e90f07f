/**
 * What an end-to-end test pays for its server and first machine on each driver, in-process as the
 * tests run it (test/support/TestServer.ts): the server's start, a machine created and running
 * (POST to `succeeded`), a command in it, and the scope's end (machines destroyed, data dir removed).
 * The process driver is the baseline, same run, alternating.
 *
 *   node --import tsx bench/test-server.ts [rounds=5]
 */
import { Effect, Exit, Scope } from "effect"
import { performance } from "node:perf_hooks"
import { client } from "../test/support/Http.js"
import { runningMachine, sh } from "../test/support/Machines.js"
import { startServer } from "../test/support/TestServer.js"

const rounds = Number(process.argv[2] ?? 5)
const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const phases = ["server start", "create to running", "exec true", "scope end"] as const
type Phase = typeof phases[number]

const once = (runtime: "sandbox" | "process") =>
  Effect.gen(function*() {
    const figures = new Map<Phase, number>()
    let mark = performance.now()
    const lap = (phase: Phase) => {
      const now = performance.now()
      figures.set(phase, now - mark)
      mark = now
    }
    const scope = yield* Scope.make()
    const server = yield* Scope.extend(startServer({ runtime }), scope)
    lap("server start")
    const owner = yield* server.bootstrap("bench@example.com")
    const api = client(server.url, { key: owner.api_key })
    mark = performance.now()
    const id = yield* runningMachine(api, "bench", { internet_access: false })
    lap("create to running")
    yield* sh(api, id, "true")
    lap("exec true")
    yield* Scope.close(scope, Exit.void)
    lap("scope end")
    return figures
  })

const program = Effect.gen(function*() {
  const all = { sandbox: [] as Array<Map<Phase, number>>, process: [] as Array<Map<Phase, number>> }
  // One unmeasured round each: the first sandbox in a process probes the host's disks once.
  yield* once("sandbox")
  yield* once("process")
  for (let round = 0; round < rounds; round++) {
    all.sandbox.push(yield* once("sandbox"))
    all.process.push(yield* once("process"))
  }
  console.log(`median of ${rounds} (ms)      sandbox   process`)
  for (const phase of phases) {
    const of = (runtime: "sandbox" | "process") => median(all[runtime].map((f) => f.get(phase)!)).toFixed(0)
    console.log(`${phase.padEnd(24)} ${of("sandbox").padStart(8)} ${of("process").padStart(9)}`)
  }
})

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exit(1)
})
