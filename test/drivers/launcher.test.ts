/**
 * The launcher: it sleeps while nothing runs, and it keeps the exactly-once claim itself
 * (launcher.pl `claim`) in the protocol of docs/drivers.md "Exactly once: the claim protocol",
 * whose owner is the shell wrapper (ExactlyOnce.ts): each side is run against the other here. The real launcher, on the host (what it does in a machine is the
 * same, with the machine's /proc/1), with a temporary HOME.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { lostExitCode, onceArgv } from "../../src/drivers/ExactlyOnce.js"
import { spawnLauncher } from "../../src/drivers/launcher/Launcher.js"
import { launcherScript } from "../../src/drivers/launcher/Script.js"
import { tempDir } from "../support/TestServer.js"

const path = process.env.PATH ?? "/usr/bin:/bin"

/** A launcher on the host, ended with the test's scope, and a HOME of its own. */
const setup = Effect.gen(function*() {
  const home = yield* tempDir
  const launcher = yield* Effect.acquireRelease(
    Effect.sync(() => spawnLauncher(["perl", "-e", launcherScript], NodePath.join(home, "launcher.log"))),
    (launcher) => Effect.sync(() => launcher.close())
  )
  const run = (operationId: string, command: string) =>
    Effect.map(
      launcher.run({
        argv: ["/bin/sh", "-c", command],
        once: operationId,
        cwd: home,
        env: { PATH: path, HOME: home }
      }, () => Effect.void),
      (exit) => exit.exitCode
    )
  const ops = NodePath.join(home, ".svc", "ops")
  const claimOf = (operationId: string) => NodeFs.readFileSync(NodePath.join(ops, `${operationId}.claim`), "utf8")
  return { home, run, ops, claimOf }
})

/** The shell wrapper run straight from here, as the nsenter path and the process driver run it. */
const wrapped = (home: string, operationId: string, command: string) =>
  Effect.async<number>((resume) => {
    const [file, ...args] = onceArgv(operationId, ["/bin/sh", "-c", command])
    NodeChild.spawn(file!, args, { env: { PATH: path, HOME: home }, stdio: "ignore" })
      .on("exit", (code) => resume(Effect.succeed(code ?? -1)))
  })

const boot = () => NodeFs.readFileSync("/proc/1/stat", "utf8").split(" ").filter((field) => field !== "")[21]

/** CPU clock ticks a process has used (user and system). */
const cpuTicks = (pid: string) => {
  const fields = NodeFs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return Number(fields[11]) + Number(fields[12])
}

describe("the launcher", () => {
  it.scopedLive("sleeps between commands: an idle launcher uses no CPU", () =>
    Effect.gen(function*() {
      const { claimOf, run } = yield* setup
      assert.strictEqual(yield* run("op-idle", "exit 0"), 0)
      const launcherPid = claimOf("op-idle").trim().split(" ")[1]!
      const before = cpuTicks(launcherPid)
      yield* Effect.sleep("500 millis")
      assert.isAtMost(cpuTicks(launcherPid) - before, 1, "a loop that does not wait burns the 50 ticks")
    }))

  it.scopedLive("claims as the wrapper does, with its own pid: no shell per command; a repeat answers the code", () =>
    Effect.gen(function*() {
      const { claimOf, home, ops, run } = yield* setup
      const log = NodePath.join(home, "log")
      assert.strictEqual(yield* run("op-1", `echo ran >> ${log}; exit 7`), 7)
      assert.strictEqual(yield* run("op-2", "exit 0"), 0)
      const [claimBoot, claimant] = claimOf("op-1").trim().split(" ")
      assert.strictEqual(claimBoot, boot())
      // The launcher claims for every command; a wrapper's shell would claim with a pid of its own.
      assert.strictEqual(claimOf("op-2"), claimOf("op-1"))
      assert.strictEqual(NodeFs.readFileSync(`/proc/${claimant}/comm`, "utf8").trim(), "svc-launcher")
      assert.strictEqual(NodeFs.readFileSync(NodePath.join(ops, "op-1.exit"), "utf8"), "7\n")
      assert.strictEqual(yield* run("op-1", `echo ran >> ${log}; exit 7`), 7, "a repeat after the end")
      assert.strictEqual(NodeFs.readFileSync(log, "utf8"), "ran\n")
    }))

  it.scopedLive("claims and exit codes are files made while it idles, linked into place; a gone launcher's are removed", () =>
    Effect.gen(function*() {
      const { claimOf, ops, run } = yield* setup
      const spares = NodePath.join(ops, "spare")
      NodeFs.mkdirSync(spares, { recursive: true })
      const stale = NodePath.join(spares, "999999.0")
      NodeFs.writeFileSync(stale, "")
      assert.strictEqual(yield* run("op-first", "exit 0"), 0)
      assert.isFalse(NodeFs.existsSync(stale), "the spare of a launcher that is gone")
      const inodes = () => NodeFs.readdirSync(spares).map((name) => NodeFs.statSync(NodePath.join(spares, name)).ino)
      // Made one per idle round after the first claim; polled, the launcher has no signal for it.
      for (let round = 0; round < 200 && inodes().length < 4; round++) yield* Effect.sleep("10 millis")
      const made = inodes()
      assert.strictEqual(made.length, 4)
      assert.strictEqual(yield* run("op-next", "exit 3"), 3)
      for (const file of ["op-next.claim", "op-next.exit"]) {
        const stat = NodeFs.statSync(NodePath.join(ops, file))
        assert.include(made, stat.ino, `${file} is one of the spares`)
        assert.strictEqual(stat.nlink, 1, `${file}: the spare's own name is gone`)
      }
      assert.strictEqual(claimOf("op-next"), claimOf("op-first"))
      assert.strictEqual(NodeFs.readFileSync(NodePath.join(ops, "op-next.exit"), "utf8"), "3\n")
    }))

  it.scopedLive("the wrapper waits for a command the launcher claimed; the launcher for one the wrapper claimed", () =>
    Effect.gen(function*() {
      const { home, run } = yield* setup
      const log = NodePath.join(home, "log")
      const slow = (code: number) => `sleep 0.3; echo ${code} >> ${log}; exit ${code}`
      const first = yield* Effect.all([
        run("op-a", slow(5)),
        Effect.zipRight(Effect.sleep("100 millis"), wrapped(home, "op-a", slow(5)))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(first, [5, 5])
      const second = yield* Effect.all([
        wrapped(home, "op-b", slow(6)),
        Effect.zipRight(Effect.sleep("100 millis"), run("op-b", slow(6)))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(second, [6, 6])
      // Once ended, each answers the other's exit file without running the command again.
      assert.strictEqual(yield* wrapped(home, "op-a", slow(5)), 5)
      assert.strictEqual(yield* run("op-b", slow(6)), 6)
      assert.strictEqual(NodeFs.readFileSync(log, "utf8"), "5\n6\n", "each ran once")
    }))

  it.scopedLive("a claim whose claimant is gone without an exit code answers the lost code", () =>
    Effect.gen(function*() {
      const { home, ops, run } = yield* setup
      NodeFs.mkdirSync(ops, { recursive: true })
      NodeFs.writeFileSync(NodePath.join(ops, "op-lost.claim"), `${boot()} 999999\n`)
      assert.strictEqual(yield* run("op-lost", `touch ${home}/ran`), lostExitCode)
      assert.isFalse(NodeFs.existsSync(NodePath.join(home, "ran")))
    }))
})
