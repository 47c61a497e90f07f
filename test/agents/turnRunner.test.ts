/**
 * The turn runner over the real `process` driver with a stand-in agent (a shell script: the real
 * agents are in test/e2e): interrupt escalation on the TestClock, and no process of a turn left
 * once its scope closed, even one that left the process group.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Queue, Scope, TestClock } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { AgentProviderShape, Mapped } from "../../src/agents/providers/AgentProvider.js"
import { runTurn, type Steer, turnMarker } from "../../src/agents/providers/TurnRunner.js"
import { pidsWithEnv } from "../../src/drivers/HostProcess.js"
import * as ProcessDriver from "../../src/drivers/process/ProcessDriver.js"
import { eventually, realSleep } from "../support/Machines.js"
import { tempDir } from "../support/TestServer.js"

/** A stand-in agent: prints one JSON line per signal it gets and ignores it. */
const stubborn = `trap 'echo "{\\"signal\\":\\"INT\\"}"' INT
trap 'echo "{\\"signal\\":\\"TERM\\"}"' TERM
setsid sleep 1000 &
echo '{"ready":true}'
while :; do sleep 1; done`

const agent = (script: string): AgentProviderShape => ({
  key: "codex",
  npmPackage: "none",
  npmVersion: "0",
  bin: "none",
  defaultModel: "none",
  keys: () => [],
  steer: "queued",
  plan: () => ({ argv: ["/bin/sh", "-c", script], env: {}, stdin: [] }),
  parser: () => (line: string): ReadonlyArray<Mapped> => {
    try {
      const parsed = JSON.parse(line)
      return [{ _tag: "event", event: { type: "message", text: parsed.signal ?? "ready" } }]
    } catch {
      return []
    }
  }
})

const setup = (script: string, options: { provider?: AgentProviderShape; sessionId?: string } = {}) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const driver = ProcessDriver.make({ dataDir: dir })
    const machineId = `m-${Math.random().toString(36).slice(2)}`
    const spec = { id: machineId, size: "small" as const, image: "default", internetAccess: true, env: {} }
    yield* driver.create(spec)
    yield* driver.start(spec)
    yield* Effect.addFinalizer(() => Effect.ignore(driver.destroy(machineId)))
    const turnId = `turn-${Math.random().toString(36).slice(2)}`
    const texts: Array<string> = []
    const sessions: Array<string> = []
    const control = {
      inbox: yield* Queue.unbounded<Steer>(),
      stop: yield* Deferred.make<boolean>(),
      close: Effect.succeed(true)
    }
    const run = runTurn(
      {
        driver,
        provider: options.provider ?? agent(script),
        machineId,
        turnId,
        tools: "/nonexistent",
        model: "m",
        effort: null,
        sessionId: options.sessionId ?? null,
        first: { inputId: turnId, text: "go" }
      },
      control,
      {
        event: (event) =>
          Effect.sync(() =>
            void texts.push(event.type === "error" ? `${event.code}: ${event.message}` : event.text ?? event.type)
          ),
        session: (id) => Effect.sync(() => void sessions.push(id)),
        accepted: () => Effect.void
      }
    )
    const processes = () => pidsWithEnv(turnMarker, turnId)
    return { run, control, texts, sessions, processes, dir }
  })

/** The escalation waits on the Clock now (it signals through an exec first, which takes real time). */
const graceStarted = eventually(Effect.map(TestClock.sleeps(), (sleeps) => sleeps.length > 0 ? true : undefined))

/**
 * A stand-in agent with sessions: resuming one runs `resume`, a new one prints a new session and a
 * good result. Every run appends a line to `runs` in `dir`.
 */
const withSessions = (dir: string, resume: string): AgentProviderShape => ({
  ...agent(""),
  plan: (input) => ({
    argv: [
      "/bin/sh",
      "-c",
      `echo run >> ${dir}/runs; ${
        input.sessionId === null ? `echo '{"session":"fresh"}'; echo '{"result":true}'` : resume
      }`
    ],
    env: {},
    stdin: []
  }),
  parser: () => (line: string): ReadonlyArray<Mapped> => {
    const parsed = JSON.parse(line)
    if (parsed.session !== undefined) return [{ _tag: "session", id: parsed.session }]
    if (parsed.unresumable !== undefined) return [{ _tag: "unresumable" }]
    if (parsed.result !== undefined) return [{ _tag: "result", ok: parsed.result }]
    return [{ _tag: "event", event: { type: "message", text: line } }]
  }
})

describe("turn runner", () => {
  it.scopedLive("a turn without the provider's key in the machine's environment fails provider_key_missing at once", () =>
    Effect.gen(function*() {
      const keyed = (names: ReadonlyArray<string>): AgentProviderShape => ({
        ...agent(`echo '{"result":true}'`),
        keys: () => names
      })
      const missing = yield* setup("", { provider: keyed(["SVC_TEST_NO_SUCH_KEY", "SVC_TEST_NOR_THIS"]) })
      const outcome = yield* missing.run
      assert.strictEqual(outcome.outcome, "failed")
      assert.strictEqual(outcome.errorCode, "provider_key_missing")
      assert.include(missing.texts.join("\n"), "set SVC_TEST_NO_SUCH_KEY or SVC_TEST_NOR_THIS")
      assert.notInclude(missing.texts, "ready", "the agent did not run")
      // A key that is there lets the agent run: PATH is set in every machine's environment.
      const present = yield* setup("", { provider: keyed(["SVC_TEST_NO_SUCH_KEY", "PATH"]) })
      const ran = yield* present.run
      assert.include(present.texts, "ready")
      assert.notStrictEqual(ran.errorCode, "provider_key_missing")
    }))

  it.scopedLive("an agent that says it cannot succeed (fatal) is ended at once with that code", () =>
    Effect.gen(function*() {
      const doomed: AgentProviderShape = {
        ...agent(`echo '{"fatal":"provider_unreachable"}'; setsid sleep 1000 & while :; do sleep 1; done`),
        parser: () => (line: string): ReadonlyArray<Mapped> => {
          const parsed = JSON.parse(line)
          return parsed.fatal === undefined ? [] : [{ _tag: "fatal", code: parsed.fatal, message: "no provider" }]
        }
      }
      const { processes, run, texts } = yield* setup("", { provider: doomed })
      const outcome = yield* run
      assert.strictEqual(outcome.outcome, "failed")
      assert.strictEqual(outcome.errorCode, "provider_unreachable")
      assert.deepStrictEqual(texts, ["provider_unreachable: no provider"])
      assert.deepStrictEqual(yield* eventually(Effect.sync(() => processes().length === 0 ? [] : undefined)), [])
    }))

  it.scopedLive("a session the agent cannot find is replaced by a new one within the turn", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const provider = withSessions(dir, `echo '{"unresumable":true}'; echo "No conversation found" >&2; exit 1`)
      const { run, sessions, texts } = yield* setup("", { provider, sessionId: "old" })
      const outcome = yield* run
      assert.strictEqual(outcome.outcome, "completed")
      assert.deepStrictEqual(sessions, ["fresh"])
      assert.deepStrictEqual(texts, [], "no error reported for the refused resume")
      assert.strictEqual(NodeFs.readFileSync(NodePath.join(dir, "runs"), "utf8"), "run\nrun\n")
    }))

  it.scopedLive("a resumed run that failed otherwise is not run again", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const provider = withSessions(dir, `echo '{"note":"started"}'; exit 1`)
      const { run, sessions } = yield* setup("", { provider, sessionId: "old" })
      const outcome = yield* run
      assert.strictEqual(outcome.outcome, "failed")
      assert.deepStrictEqual(sessions, [])
      assert.strictEqual(NodeFs.readFileSync(NodePath.join(dir, "runs"), "utf8"), "run\n")
    }))

  it.scoped("interrupt: asked with SIGINT, SIGTERM after 10 s, SIGKILL 5 s later (TestClock); the turn ends interrupted", () =>
    Effect.gen(function*() {
      const { control, processes, run, texts } = yield* setup(stubborn)
      const fiber = yield* Effect.fork(run)
      yield* eventually(Effect.sync(() => texts.includes("ready") ? true : undefined))
      yield* Deferred.succeed(control.stop, false)
      yield* eventually(Effect.sync(() => texts.includes("INT") ? true : undefined))
      yield* graceStarted
      yield* TestClock.adjust("9 seconds")
      yield* realSleep(300)
      assert.notInclude(texts, "TERM")
      yield* TestClock.adjust("1 second")
      yield* eventually(Effect.sync(() => texts.includes("TERM") ? true : undefined))
      assert.isAbove(processes().length, 0, "a stubborn agent survives SIGTERM")
      yield* graceStarted
      yield* TestClock.adjust("4 seconds")
      yield* realSleep(300)
      assert.isAbove(processes().length, 0, "no SIGKILL before 5 s")
      yield* TestClock.adjust("1 second")
      const outcome = yield* Fiber.join(fiber)
      assert.strictEqual(outcome.outcome, "interrupted")
      yield* eventually(Effect.sync(() => processes().length === 0 ? true : undefined))
    }))

  it.scoped("force kills at once", () =>
    Effect.gen(function*() {
      const { control, processes, run, texts } = yield* setup(stubborn)
      const fiber = yield* Effect.fork(run)
      yield* eventually(Effect.sync(() => texts.includes("ready") ? true : undefined))
      yield* Deferred.succeed(control.stop, true)
      const outcome = yield* Fiber.join(fiber)
      assert.strictEqual(outcome.outcome, "interrupted")
      assert.notInclude(texts, "INT")
      yield* eventually(Effect.sync(() => processes().length === 0 ? true : undefined))
    }))

  it.scopedLive("closing the turn's scope ends every process of the turn, one that left the process group too", () =>
    Effect.gen(function*() {
      const { processes, run, texts } = yield* setup(stubborn)
      const scope = yield* Scope.make()
      yield* Effect.forkIn(run, scope)
      yield* eventually(Effect.sync(() => texts.includes("ready") ? true : undefined))
      assert.isAtLeast(processes().length, 2)
      yield* Scope.close(scope, Exit.void)
      yield* eventually(Effect.sync(() => processes().length === 0 ? true : undefined), 5_000)
    }))
})
