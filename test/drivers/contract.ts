/**
 * The contract every machine driver passes (src/drivers/MachineDriver.ts): a driver test file
 * calls `driverContract(name, makeLayer)` with a function that builds the driver on a data dir.
 * Everything runs for real: real temp dirs, real processes, real time.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Logger, LogLevel, Schedule } from "effect"
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import {
  MachineDriver,
  type MachineDriverShape,
  type MachineSpec,
  type OutputStream
} from "../../src/drivers/MachineDriver.js"
import { unmountUnder } from "../../src/drivers/sandbox/Disk.js"

export type MakeDriverLayer = (dataDir: string) => Layer.Layer<MachineDriver, unknown>

let counter = 0
/** A machine id no other test (nor a parallel test file) uses. */
export const freshId = (prefix = "m") =>
  `${prefix}-${process.pid.toString(36)}-${Date.now().toString(36)}-${(counter++).toString(36)}`

export const specOf = (id: string, overrides: Partial<MachineSpec> = {}): MachineSpec => ({
  id,
  size: "small",
  image: "default",
  internetAccess: false,
  env: {},
  ...overrides
})

export const sh = (script: string): ReadonlyArray<string> => ["/bin/sh", "-c", script]

export interface Ran {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
  readonly chunks: ReadonlyArray<readonly [OutputStream, string]>
}

/** Runs `argv` in machine `id` and collects its output. */
export const run = (
  driver: MachineDriverShape,
  id: string,
  argv: ReadonlyArray<string>,
  request: { cwd?: string; env?: Record<string, string>; stdin?: string; onChunk?: () => void } = {}
) =>
  Effect.gen(function*() {
    const chunks: Array<readonly [OutputStream, string]> = []
    const { exitCode } = yield* driver.exec(id, {
      argv,
      cwd: request.cwd,
      env: request.env,
      stdin: request.stdin === undefined ? undefined : Buffer.from(request.stdin)
    }, (stream, chunk) =>
      Effect.sync(() => {
        chunks.push([stream, Buffer.from(chunk).toString("latin1")])
        request.onChunk?.()
      }))
    const text = (stream: OutputStream) => chunks.filter(([s]) => s === stream).map(([, c]) => c).join("")
    return { exitCode, stdout: text("stdout"), stderr: text("stderr"), chunks } satisfies Ran
  })

/** Creates and starts a machine, hands it to `use`, and destroys it afterwards whatever happened. */
export const withMachine = <A, E, R>(
  spec: MachineSpec,
  use: (driver: MachineDriverShape, machine: { readonly id: string; readonly bootId: string }) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const driver = yield* MachineDriver
    return yield* Effect.acquireUseRelease(
      Effect.zipRight(driver.create(spec), driver.start(spec)),
      ({ bootId }) => use(driver, { id: spec.id, bootId }),
      () => Effect.orDie(driver.destroy(spec.id))
    )
  })

/** A temp data dir for a test file, removed (machines destroyed first) after it. */
export const tempDataDir = (name: string, makeLayer: MakeDriverLayer) => {
  const state = { dataDir: "" }
  beforeAll(() => {
    state.dataDir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), `svc-driver-${name}-`))
  })
  afterAll(async () => {
    const folder = NodePath.join(state.dataDir, "machines")
    if (NodeFs.existsSync(folder)) {
      await Effect.runPromise(
        Effect.gen(function*() {
          const driver = yield* MachineDriver
          for (const id of NodeFs.readdirSync(folder)) yield* Effect.ignore(driver.destroy(id))
        }).pipe(Effect.provide(quiet(makeLayer(state.dataDir))), Effect.orDie)
      )
    }
    unmountUnder(state.dataDir)
    NodeFs.rmSync(state.dataDir, { recursive: true, force: true })
  })
  return state
}

/** The driver without its start-up warnings (tested where they matter). */
export const quiet = <A, E>(layer: Layer.Layer<A, E>) => Layer.provide(layer, Logger.minimumLogLevel(LogLevel.Error))

/**
 * The idle signal for "nothing ran": the machine's writer loop, run on the host, writes `rounds`
 * lines. A frozen loop had as many chances to write and took none; a count of rounds, not a pause,
 * so a loaded host slows both sides alike.
 */
const hostLoopRuns = (rounds: number) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const file = NodePath.join(NodeOs.tmpdir(), `svc-witness-${freshId()}`)
      const loop = `while true; do echo x >> '${file}'; sleep 0.01; done`
      return { file, child: NodeChildProcess.spawn("/bin/sh", ["-c", loop], { stdio: "ignore" }) }
    }),
    ({ file }) => until(Effect.sync(() => NodeFs.existsSync(file) && NodeFs.statSync(file).size >= 2 * rounds)),
    ({ child, file }) =>
      Effect.sync(() => {
        child.kill("SIGKILL")
        NodeFs.rmSync(file, { force: true })
      })
  )

/** Looks again every 20 ms until `check` holds: real processes on a loaded host, no bound but the test's. */
const until = <E, R>(check: Effect.Effect<boolean, E, R>) =>
  Effect.repeat(check, { schedule: Schedule.spaced("20 millis"), until: (ok) => ok })

export const driverContract = (name: string, makeLayer: MakeDriverLayer) =>
  describe(`${name} driver contract`, () => {
    const dir = tempDataDir(name, makeLayer)
    const test = (title: string, body: () => Effect.Effect<void, unknown, MachineDriver>) =>
      it.live(title, () => Effect.provide(body(), quiet(makeLayer(dir.dataDir))), 60_000)

    test("create is idempotent and keeps the disk; observe follows create, start, stop and destroy", () =>
      Effect.gen(function*() {
        const driver = yield* MachineDriver
        const spec = specOf(freshId())
        assert.deepStrictEqual(yield* driver.observe(spec.id), { exists: false, running: false, bootId: null })
        yield* driver.create(spec)
        yield* driver.create(spec)
        assert.deepStrictEqual(yield* driver.observe(spec.id), { exists: true, running: false, bootId: null })
        const { bootId } = yield* driver.start(spec)
        assert.deepStrictEqual(yield* driver.observe(spec.id), { exists: true, running: true, bootId })
        assert.strictEqual((yield* run(driver, spec.id, sh("echo kept > kept.txt"))).exitCode, 0)
        yield* driver.create(spec) // while running: keeps everything
        assert.strictEqual((yield* run(driver, spec.id, sh("cat kept.txt"))).stdout, "kept\n")
        yield* driver.stop(spec.id, { force: false })
        assert.deepStrictEqual(yield* driver.observe(spec.id), { exists: true, running: false, bootId: null })
        yield* driver.create(spec)
        yield* driver.start(spec)
        assert.strictEqual((yield* run(driver, spec.id, sh("cat kept.txt"))).stdout, "kept\n")
        yield* driver.destroy(spec.id)
        assert.deepStrictEqual(yield* driver.observe(spec.id), { exists: false, running: false, bootId: null })
        assert.isFalse(NodeFs.existsSync(NodePath.join(dir.dataDir, "machines", spec.id)))
      }))

    test("a repeated start keeps the boot; after a stop, start answers a new boot id", () =>
      Effect.gen(function*() {
        const spec = specOf(freshId())
        yield* withMachine(spec, (driver, { bootId: first }) =>
          Effect.gen(function*() {
            assert.match(first, /^[0-9a-f-]{36}$/)
            assert.strictEqual((yield* driver.start(spec)).bootId, first)
            assert.strictEqual((yield* driver.observe(spec.id)).bootId, first)
            yield* driver.stop(spec.id, { force: false })
            const second = (yield* driver.start(spec)).bootId
            assert.notStrictEqual(second, first)
            assert.strictEqual((yield* driver.observe(spec.id)).bootId, second)
            yield* driver.stop(spec.id, { force: true })
            const third = (yield* driver.start(spec)).bootId
            assert.notStrictEqual(third, second)
          }))
      }))

    test("exec works at once after every start", () =>
      Effect.gen(function*() {
        const spec = specOf(freshId())
        yield* withMachine(spec, (driver) =>
          Effect.gen(function*() {
            for (let i = 0; i < 10; i++) {
              const ran = yield* run(driver, spec.id, sh("echo $i >> boots.txt && pwd"), { env: { i: String(i) } })
              assert.deepStrictEqual([ran.exitCode, ran.stderr], [0, ""], `boot ${i}`)
              yield* driver.stop(spec.id, { force: i % 2 === 0 })
              yield* driver.start(spec)
            }
            const boots = yield* run(driver, spec.id, ["cat", "boots.txt"])
            assert.strictEqual(boots.stdout, "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n")
          }))
      }))

    test("exec answers exit codes and hands stdout and stderr over", () =>
      withMachine(specOf(freshId()), (driver, { id }) =>
        Effect.gen(function*() {
          assert.strictEqual((yield* run(driver, id, ["true"])).exitCode, 0)
          assert.strictEqual((yield* run(driver, id, ["false"])).exitCode, 1)
          const ran = yield* run(driver, id, sh("echo out; echo err >&2; exit 7"))
          assert.strictEqual(ran.exitCode, 7)
          assert.strictEqual(ran.stdout, "out\n")
          assert.strictEqual(ran.stderr, "err\n")
          const killed = yield* run(driver, id, sh("kill -9 $$"))
          assert.strictEqual(killed.exitCode, 137)
          const missing = yield* run(driver, id, ["no-such-command-here"])
          assert.strictEqual(missing.exitCode, 127)
          assert.match(missing.stderr, /no-such-command-here/)
        })))

    test("exec output comes in order and whole, however large", () =>
      withMachine(specOf(freshId()), (driver, { id }) =>
        Effect.gen(function*() {
          const big = yield* run(driver, id, sh("head -c 1000000 /dev/zero | tr '\\0' a; echo; echo done >&2"))
          assert.strictEqual(big.exitCode, 0)
          assert.strictEqual(big.stdout.length, 1_000_001)
          assert.match(big.stdout, /^a+\n$/)
          assert.strictEqual(big.stderr, "done\n")
          const ordered = yield* run(driver, id, sh("for i in 1 2 3 4 5; do echo $i; sleep 0.02; done"))
          assert.strictEqual(ordered.stdout, "1\n2\n3\n4\n5\n")
          // Streamed, not handed over at the end: the command ends only once its first line came.
          const go = NodePath.join(driver.diskPath(id), "root", "go")
          const gated = yield* run(driver, id, sh("echo 1; while [ ! -e go ]; do sleep 0.02; done; echo 2"), {
            onChunk: () => NodeFs.writeFileSync(go, "")
          })
          assert.strictEqual(gated.stdout, "1\n2\n")
        })))

    test("exec feeds stdin", () =>
      withMachine(specOf(freshId()), (driver, { id }) =>
        Effect.gen(function*() {
          assert.strictEqual((yield* run(driver, id, ["cat"], { stdin: "hello\nworld" })).stdout, "hello\nworld")
          // A command that does not read its stdin still ends normally.
          assert.strictEqual((yield* run(driver, id, ["true"], { stdin: "x".repeat(1_000_000) })).exitCode, 0)
          // No stdin: reading it finds its end at once.
          assert.strictEqual((yield* run(driver, id, ["cat"])).stdout, "")
        })))

    test("exec runs in the home folder, in a relative cwd taken from home, or in an absolute one", () =>
      withMachine(specOf(freshId()), (driver, { id }) =>
        Effect.gen(function*() {
          const home = (yield* run(driver, id, sh("echo \"$HOME\"; pwd"))).stdout.split("\n")
          assert.strictEqual(home[0], home[1])
          assert.isTrue(home[0]!.startsWith("/"))
          assert.strictEqual((yield* run(driver, id, sh("mkdir -p sub/dir"))).exitCode, 0)
          assert.strictEqual((yield* run(driver, id, ["pwd"], { cwd: "sub/dir" })).stdout, `${home[0]}/sub/dir\n`)
          assert.strictEqual((yield* run(driver, id, ["pwd"], { cwd: "/tmp" })).stdout, "/tmp\n")
          assert.notStrictEqual((yield* run(driver, id, ["pwd"], { cwd: "no/such/dir" })).exitCode, 0)
        })))

    test("exec sees the machine's environment and the request's, the request's winning", () =>
      withMachine(specOf(freshId(), { env: { FROM_MACHINE: "m", BOTH: "machine" } }), (driver, { id }) =>
        Effect.gen(function*() {
          const ran = yield* run(driver, id, sh("echo \"$FROM_MACHINE $FROM_REQUEST $BOTH\"; echo \"$PATH\""), {
            env: { FROM_REQUEST: "r", BOTH: "request" }
          })
          const [values, path] = ran.stdout.split("\n")
          assert.strictEqual(values, "m r request")
          assert.include(path!.split(":"), "/usr/bin")
        })))

    test("exec in a machine that is stopped or missing fails with NotRunning", () =>
      Effect.gen(function*() {
        const driver = yield* MachineDriver
        const missing = yield* Effect.flip(driver.exec(freshId(), { argv: ["true"] }, () =>
          Effect.void))
        assert.strictEqual(missing._tag, "NotRunning")
        const spec = specOf(freshId())
        yield* driver.create(spec)
        const created = yield* Effect.flip(driver.exec(spec.id, { argv: ["true"] }, () =>
          Effect.void))
        assert.strictEqual(created._tag, "NotRunning")
        yield* driver.start(spec)
        yield* driver.stop(spec.id, { force: false })
        const stopped = yield* Effect.flip(driver.exec(spec.id, { argv: ["true"] }, () => Effect.void))
        assert.strictEqual(stopped._tag, "NotRunning")
        yield* driver.destroy(spec.id)
      }))

    test("an exec no host can run (a NUL byte) fails for good with invalid_argument; the machine goes on", () =>
      Effect.gen(function*() {
        const spec = specOf(freshId())
        yield* withMachine(spec, (driver) =>
          Effect.gen(function*() {
            for (const request of [{ argv: ["echo", "a\u0000b"] }, { argv: ["true"], env: { X: "a\u0000" } }]) {
              const refused = yield* Effect.flip(driver.exec(spec.id, request, () => Effect.void))
              assert.strictEqual(refused._tag, "DriverError")
              assert.strictEqual(refused._tag === "DriverError" && refused.permanent, "invalid_argument")
            }
            assert.strictEqual((yield* run(driver, spec.id, ["true"])).exitCode, 0)
          }))
      }))

    test("a background process started by one exec is there for the next and gone after stop", () =>
      Effect.gen(function*() {
        const spec = specOf(freshId())
        yield* withMachine(spec, (driver) =>
          Effect.gen(function*() {
            // The loop names the machine in its command line, to be found among the host's processes too.
            const started = yield* run(
              driver,
              spec.id,
              sh(
                `nohup sh -c ': ${spec.id}; echo $$ > bg.pid; while :; do date +%s%N > beat; sleep 0.05; done' >/dev/null 2>&1 &`
              )
            )
            assert.strictEqual(started.exitCode, 0)
            const beat = () => Effect.map(run(driver, spec.id, sh("cat beat 2>/dev/null")), (ran) => ran.stdout)
            // Processes of the loop, counted by their command line (the pattern is written so that the
            // counting shell's own command line does not match it).
            const loops = Effect.map(
              run(
                driver,
                spec.id,
                sh(
                  `for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -c '[:] ${spec.id};'`
                )
              ),
              (ran) => ran.stdout.trim()
            )
            yield* until(Effect.map(beat(), (text) => text !== ""))
            assert.strictEqual((yield* run(driver, spec.id, sh("kill -0 $(cat bg.pid)"))).exitCode, 0)
            const before = yield* beat()
            // The background process beats while the machine runs.
            yield* until(Effect.map(beat(), (text) => text !== before))
            assert.strictEqual(yield* loops, "1")
            yield* driver.stop(spec.id, { force: false })
            yield* driver.start(spec)
            assert.strictEqual(yield* loops, "0", "the background loop is gone after the stop")
          }))
      }))

    test("a polite stop lets processes handle SIGTERM; a forced one sends none", () =>
      Effect.gen(function*() {
        const spec = specOf(freshId())
        yield* withMachine(spec, (driver) =>
          Effect.gen(function*() {
            const script = "trap 'echo bye > bye.txt; exit 0' TERM; echo $$ > polite.pid; while :; do sleep 0.05; done"
            const written = (file: string) =>
              Effect.map(run(driver, spec.id, ["test", "-s", file]), (ran) => ran.exitCode === 0)
            yield* run(driver, spec.id, sh(`nohup sh -c "${script}" >/dev/null 2>&1 &`))
            yield* until(written("polite.pid")) // its trap is set
            yield* driver.stop(spec.id, { force: false })
            yield* driver.start(spec)
            assert.strictEqual((yield* run(driver, spec.id, ["cat", "bye.txt"])).stdout, "bye\n")
            // A process that notes a SIGTERM and lives on: a forced stop kills it without one (no grace).
            const stubborn = "trap 'echo term >> term.txt' TERM; echo $$ > stubborn.pid; while :; do sleep 0.05; done"
            yield* run(driver, spec.id, sh(`nohup sh -c "${stubborn}" >/dev/null 2>&1 &`))
            yield* until(written("stubborn.pid"))
            yield* driver.stop(spec.id, { force: true })
            assert.isFalse((yield* driver.observe(spec.id)).running)
            yield* driver.start(spec)
            assert.isFalse(yield* written("term.txt"), "no SIGTERM before the kill")
          }))
      }))

    test("exec answers when the command exits even if a background process holds its output", () =>
      withMachine(specOf(freshId()), (driver, { id }) =>
        Effect.gen(function*() {
          const ran = yield* run(driver, id, sh("sleep 600 & echo $! > holder.pid; echo started"))
          assert.strictEqual(ran.exitCode, 0)
          assert.strictEqual(ran.stdout, "started\n")
          // Answered while the background process still holds the output.
          assert.strictEqual((yield* run(driver, id, sh("kill -0 $(cat holder.pid)"))).exitCode, 0)
        })))

    test("interrupting an exec kills its command at once", () =>
      withMachine(specOf(freshId()), (driver, { id }) =>
        Effect.gen(function*() {
          const ready = yield* Deferred.make<void>()
          const fiber = yield* Effect.fork(
            driver.exec(id, { argv: sh("echo $$ > victim.pid; echo ready; exec sleep 600") }, (stream, chunk) =>
              stream === "stdout" && Buffer.from(chunk).toString().includes("ready")
                ? Deferred.succeed(ready, undefined)
                : Effect.void)
          )
          yield* Deferred.await(ready)
          // The interruption ends without waiting out the command, and the command is gone.
          yield* Fiber.interrupt(fiber)
          assert.notStrictEqual((yield* run(driver, id, sh("kill -0 $(cat victim.pid)"))).exitCode, 0)
          // A timeout interrupts the same way (the command may not have started by then).
          const timed = yield* driver.exec(id, { argv: sh("echo $$ > timed.pid; exec sleep 600") }, () =>
            Effect.void).pipe(Effect.timeout("200 millis"), Effect.either)
          assert.isTrue(timed._tag === "Left")
          assert.strictEqual(
            (yield* run(driver, id, sh("test ! -e timed.pid || ! kill -0 $(cat timed.pid)"))).exitCode,
            0
          )
          yield* driver.stop(id, { force: true })
        })))

    test("exec with `once` runs its command at most once per id; a repeat waits and answers its exit code", () =>
      withMachine(specOf(freshId()), (driver, { id }) =>
        Effect.gen(function*() {
          const once = (key: string, script: string) =>
            Effect.map(
              driver.exec(id, { argv: sh(script), once: key }, () => Effect.void),
              (exit) => exit.exitCode
            )
          const slow = "sleep 0.3; echo ran >> once.log; exit 7"
          const [first, repeat] = yield* Effect.all([
            once("op-a", slow),
            Effect.zipRight(Effect.sleep("100 millis"), once("op-a", slow))
          ], { concurrency: "unbounded" })
          assert.deepStrictEqual([first, repeat], [7, 7])
          assert.strictEqual(yield* once("op-a", slow), 7, "after the end too")
          assert.strictEqual((yield* run(driver, id, ["cat", "once.log"])).stdout, "ran\n")
          assert.strictEqual(yield* once("op-b", "echo again >> once.log"), 0, "another id runs")
          assert.strictEqual((yield* run(driver, id, ["cat", "once.log"])).stdout, "ran\nagain\n")
          // Its output and stdin are the command's own; a missing command is 127 as without it.
          const ran = yield* driver.exec(id, { argv: ["cat"], stdin: Buffer.from("in"), once: "op-c" }, (_, chunk) =>
            Effect.sync(() =>
              assert.strictEqual(Buffer.from(chunk).toString(), "in")
            ))
          assert.strictEqual(ran.exitCode, 0)
          assert.strictEqual(yield* once("op-d", "exec no-such-command-here"), 127)
        })))

    test("the disk is a host folder; freeze pauses every process of the machine, thaw resumes them", () =>
      withMachine(specOf(freshId()), (driver, { id }) =>
        Effect.gen(function*() {
          assert.strictEqual((yield* run(driver, id, sh("echo on-disk > probe.txt"))).exitCode, 0)
          const disk = driver.diskPath(id)
          assert.strictEqual(NodeFs.readFileSync(NodePath.join(disk, "root", "probe.txt"), "utf8"), "on-disk\n")
          // A background writer appends a line every 10 ms.
          const started = yield* run(
            driver,
            id,
            sh("nohup sh -c 'while true; do echo x >> ticks; sleep 0.01; done' >/dev/null 2>&1 &")
          )
          assert.strictEqual(started.exitCode, 0)
          const ticks = () => {
            try {
              return NodeFs.readFileSync(NodePath.join(disk, "root", "ticks"), "utf8").length
            } catch {
              return 0
            }
          }
          while (ticks() === 0) yield* Effect.sleep("10 millis")
          yield* driver.freeze(id)
          yield* driver.freeze(id)
          const frozen = ticks()
          yield* hostLoopRuns(30)
          assert.strictEqual(ticks(), frozen, "nothing was written while frozen")
          yield* driver.thaw(id)
          yield* driver.thaw(id)
          // Writing again after thaw.
          yield* until(Effect.sync(() => ticks() > frozen))
          yield* driver.stop(id, { force: true })
          yield* driver.freeze(id) // a stopped machine: nothing to pause
          yield* driver.thaw(id)
        })))

    test("freeze also catches a shell between its vfork and its child's exec", () =>
      withMachine(specOf(freshId()), (driver, { id }) =>
        Effect.gen(function*() {
          // A shell that starts a command every few milliseconds: some rounds stop its child after
          // the vfork, before the exec, while the shell itself waits in the kernel (state D).
          yield* run(driver, id, sh("nohup sh -c 'while true; do sleep 0.001; done' >/dev/null 2>&1 &"))
          for (let round = 0; round < 150; round++) {
            yield* driver.freeze(id)
            yield* driver.thaw(id)
            yield* Effect.sleep("2 millis")
          }
        })))

    test("stop of a stopped machine and destroy of a missing machine succeed", () =>
      Effect.gen(function*() {
        const driver = yield* MachineDriver
        const spec = specOf(freshId())
        yield* driver.stop(spec.id, { force: false })
        yield* driver.destroy(spec.id)
        yield* driver.create(spec)
        yield* driver.stop(spec.id, { force: false })
        yield* driver.stop(spec.id, { force: true })
        yield* driver.start(spec)
        yield* driver.stop(spec.id, { force: false })
        yield* driver.stop(spec.id, { force: false })
        yield* driver.destroy(spec.id)
        yield* driver.destroy(spec.id)
        assert.deepStrictEqual(yield* driver.observe(spec.id), { exists: false, running: false, bootId: null })
        // destroy of a running machine ends it too
        yield* driver.create(spec)
        yield* driver.start(spec)
        yield* driver.destroy(spec.id)
        assert.deepStrictEqual(yield* driver.observe(spec.id), { exists: false, running: false, bootId: null })
      }))

    test("cpuSeconds grows with work and never goes down, across boots", () =>
      Effect.gen(function*() {
        const spec = specOf(freshId(), { size: "default" })
        yield* withMachine(spec, (driver) =>
          Effect.gen(function*() {
            const busy = "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done"
            const first = yield* driver.cpuSeconds(spec.id)
            assert.strictEqual((yield* run(driver, spec.id, sh(busy))).exitCode, 0)
            const second = yield* driver.cpuSeconds(spec.id)
            assert.isAbove(second, first + 0.05, "a foreground busy loop counts")
            yield* run(driver, spec.id, sh(`nohup sh -c '${busy}' >/dev/null 2>&1 &`))
            yield* Effect.sleep("100 millis")
            const third = yield* driver.cpuSeconds(spec.id)
            assert.isAtLeast(third, second)
            yield* driver.stop(spec.id, { force: false })
            const stopped = yield* driver.cpuSeconds(spec.id)
            assert.isAtLeast(stopped, third)
            yield* driver.start(spec)
            assert.isAtLeast(yield* driver.cpuSeconds(spec.id), stopped)
          }))
      }))

    test("stats answer what runs: its processes and memory while it runs, its CPU total after", () =>
      Effect.gen(function*() {
        const spec = specOf(freshId())
        yield* withMachine(spec, (driver) =>
          Effect.gen(function*() {
            if (driver.stats === undefined) return
            yield* run(driver, spec.id, sh("for i in 1 2 3; do nohup sleep 1000 >/dev/null 2>&1 & done"))
            // A process in the middle of its exec shows an empty environ for an instant (the kernel
            // installs the new memory before its variables), so the count is looked at until it holds.
            const stats = driver.stats
            yield* until(Effect.map(stats(spec.id), (now) => (now.processes ?? 0) >= 3))
            const live = yield* stats(spec.id)
            assert.isTrue(live.running)
            assert.isAtLeast(live.processes ?? 0, 3)
            assert.isAbove(live.memoryBytes ?? 0, 0)
            yield* driver.stop(spec.id, { force: true })
            const stopped = yield* driver.stats(spec.id)
            assert.isFalse(stopped.running)
            assert.isAtLeast(stopped.cpuSeconds, live.cpuSeconds)
          }))
      }))

    test("a new driver on the same data dir (svc restarted) adopts the running machine", () =>
      Effect.gen(function*() {
        const spec = specOf(freshId(), { env: { ADOPTED: "yes" } })
        yield* withMachine(spec, (driver, { bootId }) =>
          Effect.gen(function*() {
            yield* run(driver, spec.id, sh("nohup sleep 1000 >/dev/null 2>&1 & echo $! > sleeper.pid"))
            const adopted = yield* Effect.gen(function*() {
              const again = yield* MachineDriver
              assert.notStrictEqual(again, driver)
              const observed = yield* again.observe(spec.id)
              assert.deepStrictEqual(observed, { exists: true, running: true, bootId })
              assert.strictEqual((yield* again.start(spec)).bootId, bootId)
              const ran = yield* run(again, spec.id, sh("kill -0 $(cat sleeper.pid) && echo $ADOPTED"))
              assert.strictEqual(ran.stdout, "yes\n")
              yield* again.stop(spec.id, { force: false })
              return yield* again.observe(spec.id)
            }).pipe(Effect.provide(quiet(makeLayer(dir.dataDir))))
            assert.isFalse(adopted.running)
            assert.isFalse((yield* driver.observe(spec.id)).running)
          }))
      }))

    for (const internetAccess of [false, true]) {
      test(`connectPort reaches a port on the machine's loopback (internet access ${internetAccess})`, () =>
        withMachine(specOf(freshId(), { internetAccess }), (driver, { id }) =>
          Effect.gen(function*() {
            const port = 20_000 + Math.floor(Math.random() * 40_000)
            assert.strictEqual(yield* echoThrough(driver, id, port), "", "nothing listens yet: the stream ends empty")
            const started = yield* run(
              driver,
              id,
              sh(`nohup node -e 'require("net").createServer((s) => s.pipe(s)).listen(${port}, "127.0.0.1")' \
                >/dev/null 2>&1 &`)
            )
            assert.strictEqual(started.exitCode, 0)
            const echoed = yield* eventuallyEchoes(driver, id, port)
            assert.strictEqual(echoed, "ping\n")
            yield* driver.stop(id, { force: true })
            const stopped = yield* Effect.either(driver.connectPort(id, port))
            assert.isTrue(stopped._tag === "Left" && stopped.left._tag === "NotRunning")
          })))
    }
  })

/**
 * Sends "ping\n" through a fresh connection to `port` and answers what came back before it ended.
 * A driver may refuse at once when it can tell nothing of the machine listens (DriverError): "".
 */
const echoThrough = (driver: MachineDriverShape, id: string, port: number) =>
  Effect.flatMap(driver.connectPort(id, port), (stream) =>
    Effect.async<string>((resume) => {
      let text = ""
      const done = () => {
        stream.destroy()
        resume(Effect.succeed(text))
      }
      stream.on("data", (chunk: Buffer) => {
        text += chunk.toString()
        if (text.endsWith("\n")) done()
      })
      stream.on("error", done)
      stream.on("end", done)
      stream.write("ping\n")
    })).pipe(Effect.catchTag("DriverError", () => Effect.succeed("")))

/** The echo once the server in the machine listens (it starts in the background). */
/** Up to 15 s: a node that starts the echo server takes seconds on a loaded 2-core host. */
const eventuallyEchoes = (driver: MachineDriverShape, id: string, port: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 300; attempt++) {
      const echoed = yield* echoThrough(driver, id, port)
      if (echoed !== "") return echoed
      yield* Effect.sleep("50 millis")
    }
    return ""
  })
