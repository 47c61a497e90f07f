import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { childrenOf, procStat, waitFor } from "../../src/drivers/HostProcess.js"
import { MachineDriver } from "../../src/drivers/MachineDriver.js"
import * as Cgroups from "../../src/drivers/sandbox/Cgroups.js"
import * as SandboxDriver from "../../src/drivers/sandbox/SandboxDriver.js"
import { defaultSizes } from "../../src/kernel/config/MachineSizes.js"
import { driverContract, freshId, quiet, run, sh, specOf, tempDataDir, withMachine } from "./contract.js"

const makeLayer = (dataDir: string) => quiet(SandboxDriver.layer({ dataDir }))

driverContract("sandbox", makeLayer)
// The same without cgroups, as on a host that refuses them: CPU time then comes from /proc.
driverContract("sandbox without cgroups", (dataDir) => quiet(SandboxDriver.layer({ dataDir, cgroups: false })))
// Exec through nsenter every time, as on a host without Perl for the launcher.
driverContract("sandbox without the launcher", (dataDir) => quiet(SandboxDriver.layer({ dataDir, launcher: false })))

/** Names of the network interfaces in /proc/net/dev text. */
const interfaces = (text: string) =>
  text.split("\n").slice(2).map((line) => line.split(":")[0]!.trim()).filter((name) => name !== "").sort()

describe("sandbox driver isolation", () => {
  const dir = tempDataDir("sandbox-only", makeLayer)
  const test = (title: string, body: () => Effect.Effect<void, unknown, MachineDriver>) =>
    it.live(title, () => Effect.provide(body(), makeLayer(dir.dataDir)))

  test("a machine sees neither another machine's files nor its processes", () =>
    withMachine(
      specOf(freshId("a")),
      (driver, a) =>
        withMachine(specOf(freshId("b")), (_, b) =>
          Effect.gen(function*() {
            assert.isTrue(driver.isolates)
            yield* run(driver, a.id, sh("echo mine > /workspace/a.txt; echo home > /root/a.txt"))
            yield* run(driver, a.id, sh("nohup sleep 4242 >/dev/null 2>&1 &"))
            assert.strictEqual((yield* run(driver, a.id, ["cat", "/workspace/a.txt"])).stdout, "mine\n")
            assert.notStrictEqual((yield* run(driver, b.id, ["cat", "/workspace/a.txt"])).exitCode, 0)
            assert.notStrictEqual((yield* run(driver, b.id, ["cat", "/root/a.txt"])).exitCode, 0)
            const seenByA = yield* run(driver, a.id, sh("cat /proc/[0-9]*/cmdline | tr '\\0' ' '"))
            assert.include(seenByA.stdout, "sleep 4242")
            const seenByB = yield* run(driver, b.id, sh("cat /proc/[0-9]*/cmdline | tr '\\0' ' '"))
            assert.notInclude(seenByB.stdout, "sleep 4242")
            assert.notInclude(seenByB.stdout, "vitest")
            // Only the machine's own few processes: bwrap's init, the first process, the shell, ls.
            const pids = (yield* run(driver, b.id, sh("ls /proc | grep -E '^[0-9]+$'"))).stdout.trim().split("\n")
            assert.includeMembers(pids, ["1", "2"])
            assert.isBelow(pids.length, 8)
            assert.strictEqual(
              (yield* run(driver, b.id, ["hostname"])).stdout,
              `svc-${b.id.replace(/-/g, "").slice(-12)}\n`
            )
          }))
    ))

  test("without internet access a machine has only the loopback interface; with it, slirp4netns's tap0 too", () =>
    withMachine(
      specOf(freshId("offline")),
      (driver, offline) =>
        withMachine(specOf(freshId("online"), { internetAccess: true }), (_, online) =>
          Effect.gen(function*() {
            const closed = yield* run(driver, offline.id, ["cat", "/proc/net/dev"])
            assert.deepStrictEqual(interfaces(closed.stdout), ["lo"])
            const open = yield* run(driver, online.id, ["cat", "/proc/net/dev"])
            // Its own namespace, not the host's (docs/drivers.md "Network"; test/drivers/network.test.ts).
            assert.deepStrictEqual(interfaces(open.stdout), ["lo", "tap0"])
          }))
    ))

  test("host files outside /usr and /etc are not there, /usr is read-only, host secrets are hidden", () =>
    withMachine(specOf(freshId()), (driver, { id }) =>
      Effect.gen(function*() {
        assert.isTrue(NodeFs.existsSync(dir.dataDir))
        assert.notStrictEqual((yield* run(driver, id, ["test", "-e", dir.dataDir])).exitCode, 0)
        assert.notStrictEqual((yield* run(driver, id, ["test", "-e", process.cwd()])).exitCode, 0)
        assert.strictEqual((yield* run(driver, id, ["test", "-e", "/usr/bin/env"])).exitCode, 0)
        const write = yield* run(driver, id, sh("touch /usr/svc-test && echo wrote"))
        assert.notStrictEqual(write.exitCode, 0)
        assert.strictEqual(write.stdout, "")
        assert.notStrictEqual((yield* run(driver, id, sh("echo x >> /etc/hostname"))).exitCode, 0)
        if (NodeFs.existsSync("/etc/shadow")) {
          const shadow = yield* run(driver, id, ["cat", "/etc/shadow"])
          assert.isTrue(shadow.exitCode !== 0 || shadow.stdout === "")
        }
        // root in the machine is not root on the host: no devices, no mounts
        assert.notStrictEqual((yield* run(driver, id, sh("mknod /tmp/disk b 8 0"))).exitCode, 0)
        assert.notStrictEqual((yield* run(driver, id, sh("mount -o remount,rw /usr"))).exitCode, 0)
        // the machine's disk is where the driver says
        yield* run(driver, id, sh("echo here > /workspace/where.txt"))
        const onHost = NodePath.join(dir.dataDir, "machines", id, "disk", "workspace", "where.txt")
        assert.strictEqual(NodeFs.readFileSync(onHost, "utf8"), "here\n")
      })))

  test("where the host lets svc make cgroups, the machine and its commands are in them, with its size's limits", () =>
    withMachine(specOf(freshId(), { size: "small" }), (driver, { id }) =>
      Effect.gen(function*() {
        const cgroups = Cgroups.detect()
        const record = JSON.parse(NodeFs.readFileSync(NodePath.join(dir.dataDir, "machines", id, "run.json"), "utf8"))
        // pid 1 and the first process join a moment after the boot was answered, one after the
        // other (Spawner.ts): wait for both.
        const inGroups = (pid: number) => NodeFs.readFileSync(`/proc/${pid}/cgroup`, "utf8").includes(`/svc/${id}`)
        const joined = () => {
          const first = childrenOf(record.pid)
          return first.length > 0 && inGroups(record.pid) && first.every(inGroups)
        }
        assert.strictEqual(yield* waitFor(joined, 2_000), cgroups.enforced)
        if (!cgroups.enforced) return
        yield* run(driver, id, sh("nohup sleep 777 >/dev/null 2>&1 & echo $! > /tmp/sleeper"))
        const inside = yield* run(driver, id, sh("cat /proc/$(cat /tmp/sleeper)/cgroup"))
        assert.strictEqual(inside.exitCode, 0)
        const memoryLimit = NodeFs.readdirSync("/sys/fs/cgroup").includes("memory")
          ? findFile("/sys/fs/cgroup/memory", `svc/${id}`, "memory.limit_in_bytes")
          : findFile("/sys/fs/cgroup", `svc/${id}`, "memory.max")
        assert.strictEqual(Number(NodeFs.readFileSync(memoryLimit!, "utf8")), defaultSizes.small.memory_mib * 1024 ** 2)
        const sleeperOnHost = hostPidsOf(record.pid).find((pid) =>
          NodeFs.readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep\u0000777")
        )
        assert.isDefined(sleeperOnHost)
        assert.include(NodeFs.readFileSync(`/proc/${sleeperOnHost}/cgroup`, "utf8"), `/svc/${id}`)
      })))

  test("an svc that would put groups elsewhere still uses and removes the groups the machine booted in", () =>
    Effect.gen(function*() {
      const cgroups = Cgroups.detect()
      const driver = yield* MachineDriver
      const spec = specOf(freshId())
      yield* driver.create(spec)
      yield* driver.start(spec)
      const runFile = NodePath.join(dir.dataDir, "machines", spec.id, "run.json")
      const groups: ReadonlyArray<string> = JSON.parse(NodeFs.readFileSync(runFile, "utf8")).groups ?? []
      assert.strictEqual(groups.length > 0, cgroups.enforced)
      // Another svc process, in another group of its own: its groups for this id would be elsewhere.
      const elsewhere: Cgroups.Cgroups = { ...cgroups, groupsOf: (id) => [`/nonexistent/svc/${id}`] }
      const tools = yield* SandboxDriver.checkTools
      const other = SandboxDriver.make({ dataDir: dir.dataDir, cgroups: elsewhere, tools })
      yield* run(other, spec.id, sh("nohup sleep 778 >/dev/null 2>&1 &"))
      const record = JSON.parse(NodeFs.readFileSync(runFile, "utf8"))
      // The background `nohup` becomes `sleep` a moment after the exec returned: look until it has.
      let sleeper: number | undefined
      for (let tries = 0; tries < 100 && sleeper === undefined; tries++) {
        sleeper = hostPidsOf(record.pid).find((pid) =>
          NodeFs.readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep\u0000778")
        )
        if (sleeper === undefined) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      }
      assert.isDefined(sleeper)
      assert.strictEqual(
        NodeFs.readFileSync(`/proc/${sleeper}/cgroup`, "utf8").includes(`/svc/${spec.id}`),
        cgroups.enforced
      )
      yield* other.destroy(spec.id)
      for (const group of groups) assert.isFalse(NodeFs.existsSync(group), group)
    }))

  test("commands run by the launcher inherit nothing of it but stdin, stdout and stderr", () =>
    withMachine(specOf(freshId()), (driver, { id }) =>
      Effect.gen(function*() {
        // ls's own folder descriptor aside, a command has fds 0, 1 and 2 only: not the launcher's socket.
        const fds = yield* run(driver, id, sh("ls /proc/$$/fd"))
        assert.deepStrictEqual(fds.stdout.trim().split("\n").sort(), ["0", "1", "2"])
        const names = yield* run(driver, id, sh("cat /proc/[0-9]*/comm"))
        assert.include(names.stdout.split("\n"), "svc-launcher")
        // A NUL cannot reach a command (it would split the launcher's fields): refused, nothing runs.
        const refused = yield* Effect.flip(driver.exec(id, { argv: ["touch", "a\u0000b"] }, () => Effect.void))
        assert.strictEqual(refused._tag, "DriverError")
      })))

  test("an exec in flight when its machine stops answers NotRunning", () =>
    withMachine(specOf(freshId()), (driver, { id }) =>
      Effect.gen(function*() {
        const fiber = yield* Effect.fork(driver.exec(id, { argv: ["sleep", "30"] }, () => Effect.void))
        yield* Effect.sleep("200 millis")
        yield* driver.stop(id, { force: true })
        const ended = yield* Effect.flip(Fiber.join(fiber))
        assert.strictEqual(ended._tag, "NotRunning")
      })))

  test("a driver's record of a boot follows the machine when another svc stops it and boots it again", () =>
    Effect.gen(function*() {
      const driver = yield* MachineDriver
      const spec = specOf(freshId())
      yield* driver.create(spec)
      const first = yield* driver.start(spec)
      assert.strictEqual((yield* run(driver, spec.id, ["true"])).exitCode, 0)
      // Another svc process on the same data dir (a restart) stops the machine and boots it again.
      const other = yield* Effect.provide(MachineDriver, makeLayer(dir.dataDir))
      assert.strictEqual((yield* other.observe(spec.id)).bootId, first.bootId)
      yield* other.stop(spec.id, { force: true })
      assert.isFalse((yield* driver.observe(spec.id)).running)
      const refused = yield* Effect.flip(driver.exec(spec.id, { argv: ["true"] }, () => Effect.void))
      assert.strictEqual(refused._tag, "NotRunning")
      const second = yield* other.start(spec)
      assert.notStrictEqual(second.bootId, first.bootId)
      assert.strictEqual((yield* driver.observe(spec.id)).bootId, second.bootId)
      assert.strictEqual((yield* run(driver, spec.id, ["cat", "/proc/1/comm"])).stdout, "bwrap\n")
      yield* driver.destroy(spec.id)
      assert.isFalse((yield* other.observe(spec.id)).running)
    }))

  test("a machine survives the end of the driver that started it (no die-with-parent)", () =>
    Effect.gen(function*() {
      const driver = yield* MachineDriver
      const spec = specOf(freshId())
      yield* driver.create(spec)
      const { bootId } = yield* driver.start(spec)
      const record = JSON.parse(
        NodeFs.readFileSync(NodePath.join(dir.dataDir, "machines", spec.id, "run.json"), "utf8")
      )
      // The sandbox is in its own session, not in svc's process group.
      const stat = NodeFs.readFileSync(`/proc/${record.pid}/stat`, "utf8")
      const sid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3])
      assert.notStrictEqual(sid, Number(NodeFs.readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ")[3]))
      assert.isDefined(procStat(record.pid))
      const again = yield* Effect.provide(MachineDriver, makeLayer(dir.dataDir))
      assert.strictEqual((yield* again.observe(spec.id)).bootId, bootId)
      yield* again.destroy(spec.id)
      assert.isUndefined(procStat(record.pid))
    }))
})

/** Host pids in the pid namespace of `init`. */
const hostPidsOf = (init: number) => {
  const namespace = NodeFs.readlinkSync(`/proc/${init}/ns/pid`)
  return NodeFs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => {
    try {
      return NodeFs.readlinkSync(`/proc/${pid}/ns/pid`) === namespace
    } catch {
      return false
    }
  })
}

/** The file `name` in the folder ending in `suffix` under `root`. */
const findFile = (root: string, suffix: string, name: string): string | undefined => {
  const walk = (folder: string, depth: number): string | undefined => {
    if (folder.endsWith(suffix)) return NodePath.join(folder, name)
    if (depth > 6) return undefined
    for (const entry of NodeFs.readdirSync(folder, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue
      const found = walk(NodePath.join(folder, entry.name), depth + 1)
      if (found !== undefined) return found
    }
    return undefined
  }
  return walk(root, 0)
}
