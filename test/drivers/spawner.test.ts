import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { childrenOf, procStat, waitFor } from "../../src/drivers/HostProcess.js"
import { checkTools } from "../../src/drivers/sandbox/SandboxDriver.js"
import { hostSpawner, inProcess, type SandboxStart, type Spawner } from "../../src/drivers/sandbox/Spawner.js"

/** What a start reported: the pid bwrap ran as, then pid 1 once ready, or why it failed. */
const startWith = (spawner: Spawner, request: SandboxStart) => {
  const seen: { spawned?: number; ready?: number; failed?: string } = {}
  spawner.start(request, {
    spawned: (pid) => void (seen.spawned = pid),
    ready: (pid) => void (seen.ready = pid),
    failed: (reason) => void (seen.failed = reason)
  })
  return seen
}

const gone = (pid: number) => {
  const stat = procStat(pid)
  return stat === undefined || stat.state === "Z"
}

/** The parent of `pid` (field 4 of /proc/<pid>/stat). */
const parentOf = (pid: number) => {
  const text = NodeFs.readFileSync(`/proc/${pid}/stat`, "latin1")
  return Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1])
}

const logFile = () => NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-spawner-")), "log")

/** A sandbox like a machine's, whose first process writes its byte on fd 4 when `ready` (else never). */
const sandbox = (bwrap: string, ready: boolean): SandboxStart => ({
  argv: [
    bwrap,
    "--unshare-all",
    "--ro-bind",
    "/",
    "/",
    "--info-fd",
    "3",
    "--",
    "/bin/sh",
    "-c",
    ready ? "echo >&4; exec sleep infinity 4>&-" : "exec sleep infinity 4>&-"
  ],
  env: { PATH: "/usr/bin:/bin" },
  logFile: logFile(),
  groups: []
})

describe("sandbox spawner", () => {
  const spawners = { "the spawner": "host", "svc itself": "in process" } as const
  for (const [name, kind] of Object.entries(spawners)) {
    it.live(`${name}: a sandbox is ready once its first process runs; a failing bwrap says why`, () =>
      Effect.gen(function*() {
        const tools = yield* checkTools
        const spawner = kind === "host" ? hostSpawner(tools.perl ?? "perl") : inProcess
        const up = startWith(spawner, sandbox(tools.bwrap, true))
        assert.isTrue(yield* waitFor(() => up.ready !== undefined || up.failed !== undefined, 5_000))
        assert.isUndefined(up.failed)
        // pid 1 of the sandbox, with the first process as its child.
        assert.isDefined(up.spawned)
        assert.deepStrictEqual(childrenOf(up.spawned!), [up.ready!])
        assert.strictEqual(childrenOf(up.ready!).length, 1)
        const broken = { ...sandbox(tools.bwrap, true), argv: [tools.bwrap, "--no-such-option"] }
        const failing = startWith(spawner, broken)
        assert.isTrue(yield* waitFor(() => failing.failed !== undefined, 5_000))
        assert.include(failing.failed, "bwrap ended (exit 1)")
        assert.include(NodeFs.readFileSync(broken.logFile, "utf8"), "no-such-option")
        // A sandbox that was up outlives the spawner: judged once the spawner (bwrap's parent) is gone.
        const spawnerPid = kind === "host" ? parentOf(up.spawned!) : undefined
        spawner.close()
        if (spawnerPid !== undefined) assert.isTrue(yield* waitFor(() => gone(spawnerPid), 5_000), "the spawner ended")
        assert.isFalse(gone(up.ready!))
        process.kill(up.ready!, "SIGKILL")
        assert.isTrue(yield* waitFor(() => gone(up.ready!), 5_000))
      }))
  }

  it.live("when svc ends, the spawner kills the sandboxes still coming up (no svc would record them)", () =>
    Effect.gen(function*() {
      const tools = yield* checkTools
      const spawner = hostSpawner(tools.perl ?? "perl")
      const stuck = startWith(spawner, sandbox(tools.bwrap, false))
      assert.isTrue(yield* waitFor(() => stuck.spawned !== undefined && childrenOf(stuck.spawned).length > 0, 5_000))
      const [pid1] = childrenOf(stuck.spawned!)
      // The idle signal: a sandbox started after it, through the same spawner, is ready; it is not.
      const later = startWith(spawner, sandbox(tools.bwrap, true))
      assert.isTrue(yield* waitFor(() => later.ready !== undefined, 5_000))
      assert.isUndefined(stuck.ready)
      spawner.close()
      // The spawner kills them, then ends; its end reaches svc after they are gone (an exit event).
      assert.isTrue(yield* waitFor(() => gone(pid1!) && gone(stuck.spawned!) && stuck.failed !== undefined, 5_000))
      assert.include(stuck.failed, "the spawner ended")
      process.kill(later.ready!, "SIGKILL")
    }))

  it.live("a machine's network namespace, with its network job beside bwrap: ready needs both; a failed boot ends the job", () =>
    Effect.gen(function*() {
      const tools = yield* checkTools
      const spawner = hostSpawner(tools.perl ?? "perl")
      const dir = NodePath.dirname(logFile())
      // The job tells its namespace and its pid, then writes its byte on fd 6 (or never does).
      const job = (done: boolean) => [
        "/bin/sh",
        "-c",
        `readlink /proc/self/ns/net > ${dir}/ns-$1; echo $$ > ${dir}/job-$1; ${
          done ? "printf 1 >&6" : "exec sleep 300"
        }`,
        "job"
      ]
      const boot = (name: string, done: boolean) =>
        startWith(spawner, {
          ...sandbox(tools.bwrap, true),
          argv: ["/bin/false"],
          // As the driver runs it: bwrap keeps the namespace it is started in.
          afterNetns: sandbox(tools.bwrap, true).argv.flatMap((arg) =>
            arg === "--unshare-all" ? [arg, "--share-net"] : [arg]
          ),
          netJob: [...job(done), name]
        })
      const up = boot("up", true)
      assert.isTrue(yield* waitFor(() => up.ready !== undefined || up.failed !== undefined, 5_000))
      assert.isUndefined(up.failed)
      const machineNs = NodeFs.readlinkSync(`/proc/${up.ready}/ns/net`)
      assert.notStrictEqual(machineNs, NodeFs.readlinkSync("/proc/self/ns/net"), "a namespace of its own")
      assert.strictEqual(NodeFs.readFileSync(NodePath.join(dir, "ns-up"), "utf8").trim(), machineNs, "the job's too")
      // Made before the machine's own user namespace (so owned by the host's: network.test.ts
      // checks that the machine's root cannot change it).
      assert.notStrictEqual(NodeFs.readlinkSync(`/proc/${up.ready}/ns/user`), NodeFs.readlinkSync("/proc/self/ns/user"))
      assert.include(NodeFs.readFileSync(`/proc/${up.ready}/net/dev`, "utf8"), "lo:", "lo is there")
      const stuck = boot("stuck", false)
      assert.isTrue(yield* waitFor(() => NodeFs.existsSync(NodePath.join(dir, "job-stuck")), 5_000))
      // The idle signal: a boot started after it, through the same spawner, is ready; it is not.
      const later = boot("later", true)
      assert.isTrue(yield* waitFor(() => later.ready !== undefined, 5_000))
      assert.isUndefined(stuck.ready, "not ready without the job's byte")
      const jobPid = Number(NodeFs.readFileSync(NodePath.join(dir, "job-stuck"), "utf8"))
      spawner.close()
      assert.isTrue(yield* waitFor(() => gone(jobPid), 5_000), "the job ends with its boot")
      process.kill(up.ready!, "SIGKILL")
      process.kill(later.ready!, "SIGKILL")
    }))
})
