/**
 * The sandbox's network (docs/drivers.md "Network"), with real machines, a real slirp4netns and an
 * outside host in a namespace of the test's own (test/support/OutsideHost.ts). Every probe is sent
 * from inside a machine, by Perl (perl-base: every machine has it), to loopback, to the host's own
 * addresses or to the outside host: nowhere else. Real time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, type Scope } from "effect"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodePath from "node:path"
import { procStat, waitFor } from "../../src/drivers/HostProcess.js"
import { MachineDriver, type MachineDriverShape } from "../../src/drivers/MachineDriver.js"
import * as Cgroups from "../../src/drivers/sandbox/Cgroups.js"
import * as Network from "../../src/drivers/sandbox/Network.js"
import * as SandboxDriver from "../../src/drivers/sandbox/SandboxDriver.js"
import { hostServer, outsideHost, ownAddresses } from "../support/OutsideHost.js"
import { freshId, quiet, run, sh, specOf, tempDataDir, withMachine } from "./contract.js"

const dir = tempDataDir("network", (dataDir) => quiet(SandboxDriver.layer({ dataDir })))

const driverLayer = (settings: Partial<Network.NetworkSettings> = {}) =>
  quiet(SandboxDriver.layer({ dataDir: dir.dataDir, network: { ...Network.defaultSettings, ...settings } }))

/** `GET path` to host:port from inside the machine: the body, or `unreachable: <why>`. */
const probe = (driver: MachineDriverShape, id: string, host: string, port: number, path = "/") =>
  Effect.map(
    run(driver, id, [
      "perl",
      "-MIO::Socket::INET",
      "-e",
      `my ($h, $p, $path) = @ARGV;
       my $s = IO::Socket::INET->new(PeerAddr => $h, PeerPort => $p, Timeout => 3) or do { print "unreachable: $@"; exit 0 };
       print $s "GET $path HTTP/1.0\\r\\nHost: $h\\r\\n\\r\\n"; local $/; my $r = <$s>;
       print defined $r && $r =~ /\\r\\n\\r\\n(.*)$/s ? $1 : "unreachable: no answer"`,
      host,
      String(port),
      path
    ]),
    (ran) => ran.stdout
  )

/** A process that is gone, or dead and waiting for its parent to read its status. */
const ended = (pid: number) => {
  const stat = procStat(pid)
  return stat === undefined || stat.state === "Z"
}

const slirpOf = (id: string) => Network.slirpOf(Network.netPaths(NodePath.join(dir.dataDir, "machines", id)))

const test = (title: string, body: () => Effect.Effect<void, unknown, MachineDriver | Scope.Scope>) =>
  it.scopedLive(title, () => Effect.provide(body(), driverLayer()), 60_000)

describe("sandbox network", () => {
  test("a machine's network is its own: only lo without internet access, and neither can be changed from inside", () =>
    withMachine(specOf(freshId("net")), (driver, { id }) =>
      Effect.gen(function*() {
        const devices = yield* run(driver, id, ["cat", "/proc/net/dev"])
        assert.deepStrictEqual(
          devices.stdout.split("\n").slice(2).map((line) => line.split(":")[0]!.trim()).filter(Boolean),
          [
            "lo"
          ]
        )
        // The machine's root has every capability of its own user namespace, none over its network.
        const changed = yield* run(
          driver,
          id,
          sh("ip link add d0 type dummy || ip link set lo down || nft list ruleset")
        )
        assert.notStrictEqual(changed.exitCode, 0)
        assert.include(changed.stderr, "Operation not permitted")
        // Its root may still listen on a low port and reach it over lo.
        yield* run(
          driver,
          id,
          sh(
            "nohup perl -MIO::Socket::INET -e 'my $l = IO::Socket::INET->new(LocalAddr => q{127.0.0.1:80}, Listen => 5, ReuseAddr => 1) or die; while (my $c = $l->accept) { print $c qq{HTTP/1.0 200 OK\\r\\n\\r\\nlow}; close $c }' >/dev/null 2>&1 &"
          )
        )
        let answer = ""
        for (let tries = 0; tries < 50 && answer !== "low"; tries++) answer = yield* probe(driver, id, "127.0.0.1", 80)
        assert.strictEqual(answer, "low")
        const outside = yield* outsideHost
        assert.match(yield* probe(driver, id, outside.address, 80), /^unreachable/)
      })))

  test("with internet access: the outside host by address and by name; not the host, its loopback, LAN or link-local ranges, nor another machine", () =>
    Effect.gen(function*() {
      const outside = yield* outsideHost
      // The machines' DNS goes to the outside host's resolver for this test.
      const resolv = NodePath.join(dir.dataDir, `resolv-${freshId()}.conf`)
      NodeFs.writeFileSync(resolv, `nameserver ${outside.address}\n`)
      const loopbackPort = yield* hostServer("127.0.0.1", "host loopback")
      const everywherePort = yield* hostServer("0.0.0.0", "host everywhere")
      // The controls: from the host itself, both answer.
      assert.strictEqual(yield* hostGet("127.0.0.1", loopbackPort), "host loopback")
      assert.strictEqual(yield* hostGet(outside.hostAddress, everywherePort), "host everywhere")
      yield* Effect.provide(
        withMachine(
          specOf(freshId("other")),
          (driver, other) =>
            withMachine(specOf(freshId("online"), { internetAccess: true }), (_, { id }) =>
              Effect.gen(function*() {
                assert.strictEqual(yield* probe(driver, id, outside.address, 80), "outside\n")
                const named = yield* run(driver, id, sh("getent hosts svc-outside.test"))
                assert.strictEqual(named.stdout.trim().split(/\s+/)[0], outside.address)
                assert.strictEqual(yield* probe(driver, id, "svc-outside.test", 80), "outside\n")
                assert.strictEqual(
                  (yield* run(driver, id, ["cat", "/etc/resolv.conf"])).stdout,
                  "nameserver 10.0.2.3\n"
                )

                // The other machine serves a port on every address of its own.
                yield* run(
                  driver,
                  other.id,
                  sh(
                    "nohup perl -MIO::Socket::INET -e 'my $l = IO::Socket::INET->new(LocalAddr => q{0.0.0.0:7007}, Listen => 5, ReuseAddr => 1) or die; while (my $c = $l->accept) { print $c qq{HTTP/1.0 200 OK\\r\\n\\r\\nother}; close $c }' >/dev/null 2>&1 &"
                  )
                )
                let own = ""
                for (let tries = 0; tries < 50 && own !== "other"; tries++) {
                  own = yield* probe(driver, other.id, "127.0.0.1", 7007)
                }
                assert.strictEqual(own, "other")

                const refused: Array<readonly [string, number]> = [
                  ["127.0.0.1", loopbackPort],
                  [Network.slirpHost, loopbackPort],
                  [Network.slirpHost, everywherePort],
                  ...ownAddresses().map((address) => [address, everywherePort] as const),
                  [outside.lanAddress, 80],
                  [outside.linkLocalAddress, 80],
                  ["127.0.0.1", 7007],
                  [Network.slirpHost, 7007],
                  ["10.0.2.100", 7007]
                ]
                for (const [host, port] of refused) {
                  assert.match(yield* probe(driver, id, host, port), /^unreachable/, `${host}:${port}`)
                }
              }))
        ),
        driverLayer({ resolvConf: resolv })
      )
    }))

  test("SVC_MACHINE_LAN lets machines reach private ranges; host ports are reached at 10.0.2.2, those only", () =>
    Effect.gen(function*() {
      const outside = yield* outsideHost
      const allowed = yield* hostServer("127.0.0.1", "allowed")
      const other = yield* hostServer("127.0.0.1", "other")
      yield* Effect.provide(
        withMachine(specOf(freshId("lan"), { internetAccess: true }), (driver, { id }) =>
          Effect.gen(function*() {
            assert.strictEqual(yield* probe(driver, id, outside.lanAddress, 80), "outside\n")
            assert.strictEqual(yield* probe(driver, id, Network.slirpHost, allowed), "allowed")
            assert.match(yield* probe(driver, id, Network.slirpHost, other), /^unreachable/)
            assert.match(yield* probe(driver, id, "127.0.0.1", allowed), /^unreachable/)
            assert.match(yield* probe(driver, id, outside.linkLocalAddress, 80), /^unreachable/)
            assert.match(yield* probe(driver, id, outside.hostAddress, 80), /^unreachable/)
          })),
        driverLayer({ lan: true, hostPorts: [allowed] })
      )
    }))

  test("internet access is attached and detached in the running machine: same boot, observed, safe to repeat", () =>
    withMachine(specOf(freshId("toggle")), (driver, { bootId, id }) =>
      Effect.gen(function*() {
        const outside = yield* outsideHost
        assert.match(yield* probe(driver, id, outside.address, 80), /^unreachable/)
        yield* driver.setInternetAccess(id, true)
        const first = slirpOf(id)
        assert.isDefined(first)
        yield* driver.setInternetAccess(id, true)
        assert.strictEqual(slirpOf(id), first, "a repeat keeps the path it has")
        assert.strictEqual(yield* probe(driver, id, outside.address, 80), "outside\n")
        assert.strictEqual((yield* driver.observe(id)).bootId, bootId)

        yield* driver.setInternetAccess(id, false)
        yield* driver.setInternetAccess(id, false)
        assert.isUndefined(slirpOf(id))
        assert.isTrue(ended(first!), "its slirp4netns ended")
        assert.match(yield* probe(driver, id, outside.address, 80), /^unreachable/)
        assert.strictEqual((yield* driver.observe(id)).bootId, bootId)

        yield* driver.setInternetAccess(id, true)
        assert.strictEqual(yield* probe(driver, id, outside.address, 80), "outside\n")
        assert.strictEqual((yield* driver.observe(id)).bootId, bootId)
        // A start of the running machine converges to the setting it is given.
        yield* driver.start(specOf(id, { internetAccess: false }))
        assert.match(yield* probe(driver, id, outside.address, 80), /^unreachable/)
      })))

  test("a change enters only the namespace recorded at boot, never one a reused pid would name", () =>
    withMachine(specOf(freshId("ns")), (_, { id }) =>
      Effect.gen(function*() {
        const runFile = NodePath.join(dir.dataDir, "machines", id, "run.json")
        const record = JSON.parse(NodeFs.readFileSync(runFile, "utf8"))
        assert.match(record.netns, /^net:\[\d+\]$/)
        // As if pid 1's number now named another process: the host's own namespace, say.
        NodeFs.writeFileSync(runFile, JSON.stringify({ ...record, netns: NodeFs.readlinkSync("/proc/self/ns/net") }))
        const other = Context.get(yield* Layer.build(driverLayer()), MachineDriver)
        const refused = yield* Effect.flip(other.setInternetAccess(id, true))
        assert.include(refused.message, "network namespace is gone")
        assert.isUndefined(slirpOf(id))
        NodeFs.writeFileSync(runFile, JSON.stringify(record))
      })))

  test("the host's mounts are left alone: a named network namespace outlives machines' internet paths", () =>
    Effect.gen(function*() {
      const outside = yield* outsideHost
      const mounted = () =>
        NodeFs.readFileSync("/proc/self/mountinfo", "utf8").includes(`/run/netns/${outside.namespace} `)
      assert.isTrue(mounted())
      yield* withMachine(
        specOf(freshId("mounts"), { internetAccess: true }),
        (driver, { id }) =>
          Effect.gen(function*() {
            yield* driver.setInternetAccess(id, false)
            yield* driver.setInternetAccess(id, true)
            assert.strictEqual(yield* probe(driver, id, outside.address, 80), "outside\n")
          })
      )
      // slirp4netns's own sandbox unmounted it, through the host's shared mounts, before it ran in a
      // private mount namespace.
      assert.isTrue(mounted(), "/run/netns/<name> is still mounted")
    }))

  test("an address the host gains while a machine runs is closed to it once the driver sees it", () =>
    Effect.gen(function*() {
      const tools = yield* SandboxDriver.checkTools
      const driver = SandboxDriver.make({ dataDir: dir.dataDir, cgroups: Cgroups.none, tools })
      const spec = specOf(freshId("gain"), { internetAccess: true })
      yield* driver.create(spec)
      yield* driver.start(spec)
      const everywhere = yield* hostServer("0.0.0.0", "host everywhere")
      // The outside host's veth gives the host a new address, public-looking (TEST-NET-2).
      const outside = yield* outsideHost
      assert.strictEqual(yield* probe(driver, spec.id, outside.hostAddress, everywhere), "host everywhere", "the hole")
      yield* driver.refreshNetworks
      assert.match(yield* probe(driver, spec.id, outside.hostAddress, everywhere), /^unreachable/)
      assert.strictEqual(yield* probe(driver, spec.id, outside.address, 80), "outside\n", "its path stays")
      yield* driver.destroy(spec.id)
    }))

  test("a new svc rebuilds an internet path that died while none ran; a stop ends the path", () =>
    Effect.gen(function*() {
      const outside = yield* outsideHost
      const driver = yield* MachineDriver
      const spec = specOf(freshId("adopt"), { internetAccess: true })
      yield* driver.create(spec)
      const { bootId } = yield* driver.start(spec)
      const first = slirpOf(spec.id)!
      process.kill(first, "SIGKILL")
      assert.isTrue(yield* waitFor(() => ended(first), 10_000), "slirp4netns is gone")
      assert.match(yield* probe(driver, spec.id, outside.address, 80), /^unreachable/)
      // Another svc process on the same data dir: its driver's start-up sweep.
      const adopted = Context.get(yield* Layer.build(driverLayer()), MachineDriver)
      let rebuilt: number | undefined
      for (let tries = 0; tries < 100 && rebuilt === undefined; tries++) {
        rebuilt = slirpOf(spec.id)
        if (rebuilt === undefined) yield* Effect.sleep("50 millis")
      }
      assert.isDefined(rebuilt)
      assert.strictEqual(yield* probe(adopted, spec.id, outside.address, 80), "outside\n")
      assert.strictEqual((yield* adopted.observe(spec.id)).bootId, bootId)
      yield* adopted.stop(spec.id, { force: true })
      assert.isTrue(ended(rebuilt!), "the stop ended its slirp4netns")
      yield* adopted.destroy(spec.id)
    }))
})

/** `GET /` from the host itself (the controls). */
const hostGet = (host: string, port: number) =>
  Effect.async<string>((resume) => {
    NodeHttp.get({ host, port, path: "/" }, (response) => {
      let body = ""
      response.setEncoding("utf8").on("data", (chunk: string) => void (body += chunk)).on(
        "end",
        () => resume(Effect.succeed(body))
      )
    }).on("error", (error) => resume(Effect.succeed(`error: ${error.message}`)))
  })
