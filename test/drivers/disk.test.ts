/**
 * The sandbox's disks (docs/drivers.md "Disk"), judged from the host: each machine's disk is an
 * image of its size's `disk_mib`, mounted from create to destroy; writing past it fails inside the
 * machine with ENOSPC and takes no more of the host than the image; another machine is untouched;
 * a disk from before images moves into one; a disk left unmounted (a host reboot) is mounted again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { MachineDriver } from "../../src/drivers/MachineDriver.js"
import { machinePaths } from "../../src/drivers/MachineFiles.js"
import * as Disk from "../../src/drivers/sandbox/Disk.js"
import * as SandboxDriver from "../../src/drivers/sandbox/SandboxDriver.js"
import { defaultSizes } from "../../src/kernel/config/MachineSizes.js"
import { freshId, quiet, run, sh, specOf, tempDataDir, withMachine } from "./contract.js"

const diskMib = 64
const sizes = { ...defaultSizes, small: { ...defaultSizes.small, disk_mib: diskMib } }
const makeLayer = (dataDir: string) => quiet(SandboxDriver.layer({ dataDir, sizes }))

/** Bytes the host gave a file (its allocated blocks, not its apparent size). */
const allocated = (path: string) => NodeFs.statSync(path).blocks * 512

describe("sandbox disks", () => {
  const dir = tempDataDir("disk", makeLayer)
  const test = (title: string, body: () => Effect.Effect<void, unknown, MachineDriver>) =>
    it.live(title, () => Effect.provide(body(), makeLayer(dir.dataDir)), 120_000)

  test("a write past disk_mib fails with ENOSPC inside; the host gives no more than the image; another machine is untouched", () =>
    withMachine(
      specOf(freshId("full")),
      (driver, full) =>
        withMachine(specOf(freshId("other")), (_, other) =>
          Effect.gen(function*() {
            const paths = machinePaths(dir.dataDir, full.id)
            assert.isTrue(Disk.isMounted(paths), "the disk folder is a mount")
            assert.strictEqual(NodeFs.statSync(Disk.imageOf(paths)).size, diskMib * 1024 ** 2)
            yield* run(driver, other.id, sh("echo before > /workspace/mine.txt"))
            const size = yield* run(driver, full.id, sh("df -k /workspace | tail -1"))
            const blocks = Number(size.stdout.trim().split(/\s+/)[1])
            assert.isAtMost(blocks, diskMib * 1024, "df inside shows the machine's own size")
            const written = yield* run(
              driver,
              full.id,
              sh("dd if=/dev/urandom of=/root/big bs=1M count=200 conv=fsync 2>&1; echo exit $?")
            )
            assert.include(written.stdout, "No space left on device")
            assert.notInclude(written.stdout, "exit 0")
            assert.isAtMost(
              allocated(Disk.imageOf(paths)),
              diskMib * 1024 ** 2,
              "the host holds no more than the image"
            )
            // Every folder of the machine shares the one limit; the other machine writes on.
            const tmp = yield* run(driver, full.id, sh("head -c 20000000 /dev/zero > /tmp/more"))
            assert.notStrictEqual(tmp.exitCode, 0)
            const after = yield* run(
              driver,
              other.id,
              sh("echo after >> /workspace/mine.txt && cat /workspace/mine.txt")
            )
            assert.deepStrictEqual([after.exitCode, after.stdout], [0, "before\nafter\n"])
            // Space freed inside is the machine's again.
            assert.strictEqual(
              (yield* run(driver, full.id, sh("rm /root/big /tmp/more; echo ok > /root/ok"))).exitCode,
              0
            )
          }))
    ))

  test("destroy unmounts the disk and removes its image", () =>
    Effect.gen(function*() {
      const driver = yield* MachineDriver
      const spec = specOf(freshId("gone"))
      yield* driver.create(spec)
      const paths = machinePaths(dir.dataDir, spec.id)
      assert.isTrue(Disk.isMounted(paths))
      yield* driver.start(spec)
      yield* driver.destroy(spec.id)
      assert.isFalse(Disk.isMounted(paths))
      assert.isFalse(NodeFs.existsSync(paths.machine))
      yield* driver.destroy(spec.id)
    }))

  test("a disk from before images moves into one at its start, files kept", () =>
    Effect.gen(function*() {
      const driver = yield* MachineDriver
      const spec = specOf(freshId("old"))
      const paths = machinePaths(dir.dataDir, spec.id)
      NodeFs.mkdirSync(NodePath.join(paths.disk, "workspace", "deep"), { recursive: true })
      NodeFs.writeFileSync(NodePath.join(paths.disk, "workspace", "deep", "kept.txt"), "kept\n")
      NodeFs.symlinkSync("/etc/passwd", NodePath.join(paths.disk, "workspace", "link"))
      yield* driver.start(spec)
      assert.isTrue(Disk.isMounted(paths))
      const read = yield* run(driver, spec.id, sh("cat /workspace/deep/kept.txt; readlink /workspace/link"))
      assert.strictEqual(read.stdout, "kept\n/etc/passwd\n")
      yield* driver.destroy(spec.id)
    }))

  test("a disk left unmounted (the host rebooted) is mounted again when a driver starts", () =>
    Effect.gen(function*() {
      const driver = yield* MachineDriver
      const spec = specOf(freshId("reboot"))
      const paths = machinePaths(dir.dataDir, spec.id)
      yield* driver.create(spec)
      NodeFs.writeFileSync(NodePath.join(paths.disk, "workspace", "kept.txt"), "kept\n")
      assert.strictEqual(NodeChild.spawnSync("umount", [paths.disk]).status, 0)
      assert.isFalse(NodeFs.existsSync(NodePath.join(paths.disk, "workspace", "kept.txt")))
      yield* Effect.provide(
        Effect.gen(function*() {
          const restarted = yield* MachineDriver
          assert.isTrue(Disk.isMounted(paths))
          assert.strictEqual(
            NodeFs.readFileSync(NodePath.join(paths.disk, "workspace", "kept.txt"), "utf8"),
            "kept\n"
          )
          yield* restarted.destroy(spec.id)
        }),
        makeLayer(dir.dataDir)
      )
      assert.isFalse(NodeFs.existsSync(paths.machine))
      yield* driver.destroy(spec.id)
    }))
})

/** renameat2's number (RENAME_EXCHANGE swaps two names in one step). */
const renameat2 = process.arch === "arm64" ? 276 : 316

describe("sandbox fork of a running machine", () => {
  const dir = tempDataDir("fork", makeLayer)
  const test = (title: string, body: () => Effect.Effect<void, unknown, MachineDriver>) =>
    it.live(title, () => Effect.provide(body(), makeLayer(dir.dataDir)), 180_000)

  test("a process in a nested pid namespace swapping a file for a link to a host file gets no host file into the fork; it is frozen meanwhile", () =>
    withMachine(specOf(freshId("src")), (driver, source) =>
      Effect.gen(function*() {
        const secret = NodePath.join(dir.dataDir, "host-secret.txt")
        NodeFs.writeFileSync(secret, "HOST-SECRET-4821\n")
        const marker = `svc-swap-${source.id}`
        const started = yield* run(
          driver,
          source.id,
          sh(
            `mkdir -p /root/swap && cd /root/swap && echo mine > a && ln -sfn ${secret} b && ` +
              `nohup unshare --pid --fork perl -e 'my ($a, $b) = ("a", "b"); while (1) { syscall(${renameat2}, -100, $a, -100, $b, 2) }' ${marker} ` +
              `>/dev/null 2>&1 &`
          )
        )
        assert.strictEqual(started.exitCode, 0, started.stderr)
        // The swapping process, found from the host by its marker: in a pid namespace of its own.
        const swapper = () =>
          NodeFs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).find((pid) => {
            try {
              const argv = NodeFs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
              return argv[0] === "perl" && argv.includes(marker)
            } catch {
              return false
            }
          })
        let pid: string | undefined
        for (let tries = 0; tries < 200 && (pid = swapper()) === undefined; tries++) yield* Effect.sleep("25 millis")
        assert.isDefined(pid, "the swapper runs")
        const pid1 = JSON.parse(NodeFs.readFileSync(machinePaths(dir.dataDir, source.id).run, "utf8")).pid
        assert.notStrictEqual(
          NodeFs.readlinkSync(`/proc/${pid}/ns/pid`),
          NodeFs.readlinkSync(`/proc/${pid1}/ns/pid`),
          "a nested pid namespace"
        )
        // Frozen, whatever its pid namespace: it is in the machine's frozen group.
        yield* driver.freeze(source.id)
        const groups = NodeFs.readFileSync(`/proc/${pid}/cgroup`, "utf8")
        const freezerLine = groups.split("\n").find((line) => line.split(":")[1] === "freezer")
        if (freezerLine !== undefined) {
          const group = NodePath.join("/sys/fs/cgroup/freezer", freezerLine.split(":")[2]!)
          assert.strictEqual(NodeFs.readFileSync(NodePath.join(group, "freezer.state"), "utf8").trim(), "FROZEN")
        }
        yield* driver.thaw(source.id)

        for (let round = 0; round < 3; round++) {
          const fork = specOf(freshId("fork"))
          const copied = yield* driver.copyDisk!(source.id, fork.id)
          assert.isDefined(copied)
          yield* driver.create(fork)
          const forkDisk = machinePaths(dir.dataDir, fork.id).disk
          // Judged on the host: no file of the fork holds the host file's bytes; a and b are a file and a link.
          const found = NodeChild.spawnSync("grep", ["-r", "-l", "HOST-SECRET", forkDisk], { encoding: "utf8" })
          assert.strictEqual(found.stdout, "", `host bytes in the fork: ${found.stdout}`)
          const kinds = ["a", "b"].map((name) =>
            NodeFs.lstatSync(NodePath.join(forkDisk, "root", "swap", name)).isSymbolicLink()
          ).sort()
          assert.deepStrictEqual(kinds, [false, true])
          yield* driver.destroy(fork.id)
        }
        // The source runs on after its forks.
        assert.strictEqual((yield* run(driver, source.id, ["true"])).exitCode, 0)
      })))
})
