/**
 * The escape suite (docs/drivers.md "Isolation"): a hostile tenant, as the machine's root through
 * exec, tries what would give it the host or another machine; every verdict is read from the host.
 * Two machines on the production driver are shared by every case (boots are the slow part).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, ManagedRuntime } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { pidNamespace, pidsInNamespace } from "../../src/drivers/HostProcess.js"
import { MachineDriver, type MachineDriverShape } from "../../src/drivers/MachineDriver.js"
import * as Cgroups from "../../src/drivers/sandbox/Cgroups.js"
import * as SandboxDriver from "../../src/drivers/sandbox/SandboxDriver.js"
import { defaultSizes } from "../../src/kernel/config/MachineSizes.js"
import { freshId, quiet, run, sh, specOf } from "./contract.js"

/** A small process limit, so that the fork bomb meets it quickly. */
const processLimit = 300
/** What svc's environment holds and no machine may read (as `SVC_OPERATOR_TOKEN` would). */
const secret = `svc-secret-${NodeCrypto.randomBytes(12).toString("hex")}`
/** As `SVC_SECRET_KEYS` would hold. */
const keys = `svc-keys-${NodeCrypto.randomBytes(12).toString("hex")}`
const proof = `svc-escape-proof-${NodeCrypto.randomBytes(6).toString("hex")}`

const state = {
  dataDir: "",
  runtime: undefined as ManagedRuntime.ManagedRuntime<MachineDriver, unknown> | undefined,
  a: freshId("esc-a"),
  b: freshId("esc-b")
}

/** Host pids of every process of machine `id` (its pid namespace), judged from its run record. */
const machineProcesses = (id: string) => {
  const record = JSON.parse(NodeFs.readFileSync(NodePath.join(state.dataDir, "machines", id, "run.json"), "utf8"))
  return pidsInNamespace(pidNamespace(record.pid)!)
}

/** Passed reversed: the shell and the launcher that carry the scan's arguments must not hold them. */
const reverse = (text: string) => [...text].reverse().join("")

const inMachine = (id: string, script: string) =>
  state.runtime!.runPromise(Effect.flatMap(MachineDriver, (driver: MachineDriverShape) => run(driver, id, sh(script))))

/** The host's view of a file under /sys/fs/cgroup for machine `id`, when the host has it. */
const groupFile = (id: string, v1: string, v2: string) => {
  for (const candidate of [NodePath.join("memory", "svc", id, v1), NodePath.join("svc", id, v2)]) {
    const found = findUnder("/sys/fs/cgroup", candidate)
    if (found !== undefined) return found
  }
  return undefined
}

const findUnder = (root: string, tail: string, depth = 0): string | undefined => {
  if (NodeFs.existsSync(NodePath.join(root, tail))) return NodePath.join(root, tail)
  if (depth > 4) return undefined
  let entries: Array<NodeFs.Dirent> = []
  try {
    entries = NodeFs.readdirSync(root, { withFileTypes: true })
  } catch {
    return undefined
  }
  for (const entry of entries) {
    if (!entry.isDirectory()) continue
    const found = findUnder(NodePath.join(root, entry.name), tail, depth + 1)
    if (found !== undefined) return found
  }
  return undefined
}

describe("escape suite: a machine's root against the host and its neighbours", () => {
  beforeAll(async () => {
    // Set before the driver starts anything: every process svc starts inherits nothing of it.
    process.env.SVC_OPERATOR_TOKEN = secret
    process.env.SVC_SECRET_KEYS = keys
    state.dataDir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-escape-"))
    const sizes = { ...defaultSizes, small: { ...defaultSizes.small, processes: processLimit } }
    state.runtime = ManagedRuntime.make(quiet(SandboxDriver.layer({ dataDir: state.dataDir, sizes })))
    await state.runtime.runPromise(Effect.gen(function*() {
      const driver = yield* MachineDriver
      for (const id of [state.a, state.b]) {
        yield* driver.create(specOf(id, { env: { MARKER: `marker-${id}` } }))
        yield* driver.start(specOf(id, { env: { MARKER: `marker-${id}` } }))
      }
    }))
  }, 120_000)

  afterAll(async () => {
    delete process.env.SVC_OPERATOR_TOKEN
    delete process.env.SVC_SECRET_KEYS
    if (state.runtime !== undefined) {
      await state.runtime.runPromise(Effect.gen(function*() {
        const driver = yield* MachineDriver
        for (const id of [state.a, state.b]) yield* Effect.ignore(driver.destroy(id))
      }))
      await state.runtime.dispose()
    }
    NodeFs.rmSync(state.dataDir, { recursive: true, force: true })
  }, 120_000)

  it("the machine's root is a host uid of its own range, not the host's root", async () => {
    const inside = await inMachine(state.a, "id -u; cat /proc/self/uid_map /proc/self/gid_map; sleep 600 & echo $!")
    const [uid, uidMap, gidMap] = inside.stdout.split("\n")
    assert.strictEqual(uid, "0")
    const [inner, outer, count] = uidMap!.trim().split(/\s+/).map(Number)
    assert.deepStrictEqual([inner, count], [0, 65_536])
    assert.isAtLeast(outer!, 2 ** 31)
    assert.strictEqual(gidMap!.trim().split(/\s+/)[1], String(outer))
    // The other machine has a range of its own.
    const other = (await inMachine(state.b, "cat /proc/self/uid_map")).stdout.trim().split(/\s+/)[1]
    assert.notStrictEqual(other, String(outer))
    // From the host: that sleep runs as the range's first uid, not as the host's root.
    const sleeper = Number(inside.stdout.split("\n")[3])
    const hostUids = NodeFs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).flatMap((pid) => {
      try {
        const status = NodeFs.readFileSync(`/proc/${pid}/status`, "utf8")
        const nspid = /^NSpid:\s+(.*)$/m.exec(status)![1]!.trim().split(/\s+/)
        const cmdline = NodeFs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
        return nspid.length > 1 && Number(nspid.at(-1)) === sleeper && cmdline === "sleep\u0000600\u0000"
          ? [Number(/^Uid:\s+(\d+)/m.exec(status)![1])]
          : []
      } catch {
        return []
      }
    })
    assert.include(hostUids, outer)
    assert.notInclude(hostUids, 0)
  }, 60_000)

  it("/etc and /usr stay the host's, read-only: remounting fails, nothing is written on the host", async () => {
    const attempt = await inMachine(
      state.a,
      `mount -o remount,bind,rw /etc; echo x > /etc/${proof}; mount -o remount,rw /etc; echo x > /etc/${proof}
       mount -o remount,bind,rw /usr; echo x > /usr/${proof}; echo x > /usr/local/bin/${proof}
       umount /etc/shadow; cat /etc/shadow; true`
    )
    assert.strictEqual(attempt.exitCode, 0)
    for (const path of [`/etc/${proof}`, `/usr/${proof}`, `/usr/local/bin/${proof}`]) {
      assert.isFalse(NodeFs.existsSync(path), path)
    }
    assert.notInclude(attempt.stdout, "root:")
  }, 60_000)

  it("host kernel settings are out of reach", async () => {
    const files = ["kernel/core_pattern", "vm/swappiness", "kernel/hostname"]
    const before = files.map((file) => NodeFs.readFileSync(`/proc/sys/${file}`, "utf8"))
    const attempt = await inMachine(
      state.a,
      `for f in ${files.join(" ")}; do echo 7 > /proc/sys/$f && echo "wrote $f"; done
       mount -o remount,rw /proc/sys 2>/dev/null; echo 7 > /proc/sys/vm/swappiness && echo "wrote again"; true`
    )
    assert.notInclude(attempt.stdout, "wrote")
    assert.deepStrictEqual(files.map((file) => NodeFs.readFileSync(`/proc/sys/${file}`, "utf8")), before)
  }, 60_000)

  it("a cgroup mount shows only the machine's own group; the other machine's limits stay", async () => {
    const memoryB = groupFile(state.b, "memory.limit_in_bytes", "memory.max")
    const before = memoryB === undefined ? undefined : NodeFs.readFileSync(memoryB, "utf8")
    const seen = await inMachine(
      state.a,
      `mkdir -p /tmp/v1 /tmp/v2
       mount -t cgroup -o memory none /tmp/v1 2>/dev/null && find /tmp/v1 -maxdepth 4
       mount -t cgroup2 none /tmp/v2 2>/dev/null && find /tmp/v2 -maxdepth 4
       for f in $(find /tmp/v1 /tmp/v2 -name memory.limit_in_bytes -o -name memory.max 2>/dev/null); do
         echo 67108864 > $f 2>/dev/null && echo "wrote $f"; echo 1 > $f 2>/dev/null && echo "wrote $f"
       done; true`
    )
    assert.notInclude(seen.stdout, state.b)
    assert.notInclude(seen.stdout, "/svc")
    assert.notInclude(seen.stdout, "wrote")
    if (memoryB !== undefined) assert.strictEqual(NodeFs.readFileSync(memoryB, "utf8"), before)
    // From the host: every process of the machine is still in its own groups (none moved out).
    if (!Cgroups.detect().enforced) return
    for (const pid of machineProcesses(state.a)) {
      for (const line of NodeFs.readFileSync(`/proc/${pid}/cgroup`, "utf8").trim().split("\n")) {
        const controllers = line.split(":")[1]!.split(",")
        if (controllers.includes("memory") || controllers.includes("pids")) {
          assert.include(line, `/svc/${state.a}`, `${pid}: ${line}`)
        }
      }
    }
  }, 60_000)

  it("the machine's output and the launcher's complaints reach no host file it could fill", async () => {
    const logs = ["sandbox.log", "launcher.log"].map((name) => NodePath.join(state.dataDir, "machines", state.a, name))
    await inMachine(
      state.a,
      `for f in /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2; do head -c 1048576 /dev/zero > $f; done 2>/dev/null
       true`
    ).catch(() => undefined)
    for (const log of logs) {
      const size = NodeFs.existsSync(log) ? NodeFs.statSync(log).size : 0
      assert.isAtMost(size, 64 * 1024, log)
    }
  }, 60_000)

  it("no secret of svc's in any process or memory the machine can read", async () => {
    // Every process's environment and every readable mapping of every process in the machine (the
    // launcher among them), searched for the secret; MARKER (the machine's own) shows it works.
    const scan = await inMachine(
      state.a,
      `perl -e '
        my ($secret, $marker) = map { scalar reverse } @ARGV; my %found;
        for my $pid (grep { /^\\d+$/ && $_ != $$ } map { s{^/proc/}{}r } glob("/proc/*")) {
          for my $what ("environ", "cmdline") {
            open(my $fh, "<", "/proc/$pid/$what") or next; local $/; my $text = <$fh> // "";
            $found{secret}++ if index($text, $secret) >= 0; $found{marker}++ if index($text, $marker) >= 0;
          }
          open(my $maps, "<", "/proc/$pid/maps") or next; open(my $mem, "<", "/proc/$pid/mem") or next;
          while (<$maps>) {
            my ($from, $to, $perm) = /^([0-9a-f]+)-([0-9a-f]+) (\\S+)/ or next;
            next unless $perm =~ /^r/; my $size = hex($to) - hex($from); next if $size > 64 << 20;
            sysseek($mem, hex($from), 0) or next; my $got = sysread($mem, my $bytes, $size) or next;
            $found{secret}++ if index($bytes, $secret) >= 0; $found{memory}++ if index($bytes, $marker) >= 0;
          }
        }
        print join(",", map { "$_=$found{$_}" } sort keys %found), "\\n";
      ' '${reverse(secret)}' '${reverse(`marker-${state.a}`)}'`
    )
    assert.strictEqual(scan.exitCode, 0, scan.stderr)
    assert.include(scan.stdout, "marker=")
    assert.include(scan.stdout, "memory=")
    assert.notInclude(scan.stdout, "secret=")
    // Nor the host's data dir in any command line or environment.
    const seen = await inMachine(state.a, "cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ | tr '\\0' '\\n'")
    assert.notInclude(seen.stdout, state.dataDir)
    assert.notInclude(seen.stdout, "SVC_")
  }, 120_000)

  it("no host path nor secret in anything a machine can read of its processes (ps, mountinfo, fds)", async () => {
    // What `ps`, `ls -l /proc/*/fd`, lsof and mountinfo read, for every process visible, the
    // launcher (busy with this very command) among them.
    const seen = await inMachine(
      state.a,
      `for p in /proc/[0-9]*; do
         for f in cmdline environ status stat maps mountinfo cgroup; do cat $p/$f 2>/dev/null | tr '\\0' ' '; echo; done
         for l in $p/cwd $p/exe $p/root $p/fd/* $p/map_files/*; do readlink $l 2>/dev/null; done
       done; cat /proc/self/mountinfo /proc/mounts; ps -eo pid,args 2>/dev/null; echo scanned`
    )
    assert.include(seen.stdout, "svc-launcher")
    assert.include(seen.stdout, "scanned")
    const hostPaths = [state.dataDir, NodePath.basename(state.dataDir), process.cwd(), "node_modules", "/machines/"]
    for (const needle of [...hostPaths, secret, keys, "SVC_"]) assert.notInclude(seen.stdout, needle, needle)
    // Judged from the host too: no process of the machine holds a file of the host's open (a
    // host log it could fill past its disk, through ptrace or /proc/<pid>/mem).
    const inside = machineProcesses(state.a)
    assert.isAbove(inside.length, 2)
    for (const pid of inside) {
      for (const fd of NodeFs.readdirSync(`/proc/${pid}/fd`)) {
        let target = ""
        try {
          target = NodeFs.readlinkSync(`/proc/${pid}/fd/${fd}`)
        } catch {
          continue // closed meanwhile
        }
        for (const path of hostPaths.slice(0, 1).concat(process.cwd())) assert.notInclude(target, path, `${pid}/${fd}`)
      }
    }
  }, 120_000)

  it("no host process to trace, no kernel memory, no devices, no raw sockets", async () => {
    const attempt = await inMachine(
      state.a,
      `perl -e 'print syscall(${
        process.arch === "arm64" ? 117 : 101
      }, 16, ${process.pid}, 0, 0) == 0 ? "traced\\n" : "ptrace: $!\\n"'
       ls /proc/kcore /dev/mem /dev/kmem /dev/sda /dev/vda 2>/dev/null && echo "device there"
       mknod /tmp/mem c 1 1 && echo "mknod made"; mknod /tmp/disk b 8 0 && echo "mknod made"
       perl -MSocket -e 'socket(my $s, PF_INET, SOCK_RAW, 1) ? print "raw socket\\n" : print "raw: $!\\n"'
       ls /proc | grep -E '^[0-9]+$' | wc -l; true`
    )
    assert.notInclude(attempt.stdout, "traced")
    assert.notInclude(attempt.stdout, "device there")
    assert.notInclude(attempt.stdout, "mknod made")
    assert.notInclude(attempt.stdout, "raw socket")
    assert.include(attempt.stdout, "ptrace: No such process")
  }, 60_000)

  it("keyctl, bpf, perf_event_open and userfaultfd answer EPERM (the seccomp filter)", async () => {
    // x86_64 numbers, then aarch64's.
    const calls = process.arch === "arm64"
      ? { keyctl: 219, add_key: 217, request_key: 218, bpf: 280, perf_event_open: 241, userfaultfd: 282 }
      : { keyctl: 250, add_key: 248, request_key: 249, bpf: 321, perf_event_open: 298, userfaultfd: 323 }
    const script = Object.entries(calls).map(([name, nr]) =>
      `perl -e '$! = 0; my $r = syscall(${nr}, 0, 0, 0, 0, 0); print "${name} $r ", $!+0, "\\n"'`
    ).join("\n")
    const answers = (await inMachine(state.a, script)).stdout.trim().split("\n")
    assert.strictEqual(answers.length, 6)
    // EPERM is 1.
    for (const line of answers) assert.match(line, /^\w+ -1 1$/, line)
  }, 60_000)

  it("forks past the size's process limit fail with EAGAIN", async () => {
    if (!Cgroups.detect().enforced) return
    const bomb = await inMachine(
      state.a,
      `perl -e '
        my @kids; for (1 .. 1500) { my $pid = fork; if (!defined $pid) { print scalar(@kids), " $!\\n"; last }
          if ($pid == 0) { sleep 60; exit 0 } push @kids, $pid }
        kill "KILL", @kids; waitpid($_, 0) for @kids; print "forked all\\n" if @kids == 1500'`
    )
    assert.notInclude(bomb.stdout, "forked all")
    const [count, ...why] = bomb.stdout.trim().split(" ")
    assert.isBelow(Number(count), processLimit)
    assert.strictEqual(why.join(" "), "Resource temporarily unavailable")
  }, 120_000)

  it("nested user, pid and mount namespaces work inside (containers in a machine)", async () => {
    const nested = await inMachine(
      state.b,
      "unshare -Urpf --mount-proc sh -c 'id -u; echo $$; ls /proc | grep -cE \"^[0-9]+$\"'"
    )
    assert.strictEqual(nested.exitCode, 0, nested.stderr)
    const [uid, pid, processes] = nested.stdout.trim().split("\n")
    assert.deepStrictEqual([uid, pid], ["0", "1"])
    assert.isAtMost(Number(processes), 3)
    // A mount namespace of its own: a tmpfs mounted there is not seen by the machine.
    const mounted = await inMachine(
      state.b,
      `mkdir -p /tmp/nested && unshare -m sh -c 'mount -t tmpfs none /tmp/nested && touch /tmp/nested/inner && ls /tmp/nested'
       ls /tmp/nested | wc -l`
    )
    assert.strictEqual(mounted.exitCode, 0, mounted.stderr)
    assert.strictEqual(mounted.stdout, "inner\n0\n")
  }, 60_000)

  // Last: it destroys machine b.
  it(
    "cgroup delegation: the machine's root limits a group of its own below its group, never its own limits",
    async () => {
      const record = JSON.parse(
        NodeFs.readFileSync(NodePath.join(state.dataDir, "machines", state.b, "run.json"), "utf8")
      )
      const groups: ReadonlyArray<string> = record.groups ?? []
      const memory = groups.find((dir) => NodeFs.existsSync(NodePath.join(dir, "memory.limit_in_bytes")))
      const pids = groups.find((dir) => NodeFs.existsSync(NodePath.join(dir, "pids.max")))
      if (memory === undefined || pids === undefined) return // delegated on cgroup v1 only (docs/drivers.md)
      const limits = [NodePath.join(memory, "memory.limit_in_bytes"), NodePath.join(pids, "pids.max")]
      const before = limits.map((file) => NodeFs.readFileSync(file, "utf8"))
      const inside = await inMachine(
        state.b,
        `mkdir -p /tmp/cm /tmp/cp && mount -t cgroup -o memory none /tmp/cm && mount -t cgroup -o pids none /tmp/cp || exit 3
       mkdir /tmp/cm/inner /tmp/cm/inner/deeper /tmp/cp/inner || exit 4
       echo 33554432 > /tmp/cm/inner/memory.limit_in_bytes && echo 7 > /tmp/cp/inner/pids.max || exit 5
       sleep 600 >/dev/null 2>&1 &
       echo $! > /tmp/cm/inner/cgroup.procs && echo $! > /tmp/cp/inner/cgroup.procs || exit 6
       echo 1073741824000 > /tmp/cm/memory.limit_in_bytes 2>/dev/null && echo "wrote memory"
       echo max > /tmp/cp/pids.max 2>/dev/null && echo "wrote pids"
       echo $!`
      )
      assert.strictEqual(inside.exitCode, 0, inside.stderr)
      assert.notInclude(inside.stdout, "wrote")
      // From the host: the machine's limits are unchanged, the child's is the lower one, and the
      // sleep is in the child, still below the machine's group.
      assert.deepStrictEqual(limits.map((file) => NodeFs.readFileSync(file, "utf8")), before)
      assert.strictEqual(
        NodeFs.readFileSync(NodePath.join(memory, "inner", "memory.limit_in_bytes"), "utf8").trim(),
        "33554432"
      )
      assert.strictEqual(NodeFs.readFileSync(NodePath.join(pids, "inner", "pids.max"), "utf8").trim(), "7")
      const sleeper = machineProcesses(state.b).find((pid) => {
        try {
          return NodeFs.readFileSync(`/proc/${pid}/cmdline`, "utf8") === "sleep\u0000600\u0000"
        } catch {
          return false
        }
      })
      assert.isDefined(sleeper)
      const lines = NodeFs.readFileSync(`/proc/${sleeper}/cgroup`, "utf8").trim().split("\n")
      for (const controller of ["memory", "pids"]) {
        const line = lines.find((line) => line.split(":")[1]!.split(",").includes(controller))
        assert.match(line ?? "", new RegExp(`/svc/${state.b}/inner$`), controller)
      }
      // Its delete removes the groups it made, deepest first, with its own.
      await state.runtime!.runPromise(
        Effect.flatMap(MachineDriver, (driver: MachineDriverShape) => driver.destroy(state.b))
      )
      for (const dir of groups) assert.isFalse(NodeFs.existsSync(dir), dir)
    },
    120_000
  )
})
