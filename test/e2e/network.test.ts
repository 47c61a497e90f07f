/**
 * Machine networking end to end (extensions.md §16, docs/drivers.md "Network"): the real `svc
 * serve` with real sandboxes, and an outside host in a network namespace of the test's own
 * (test/support/OutsideHost.ts). Probes run inside the machines through exec (Perl, which every
 * machine has) and go only to loopback, the host's own addresses and the outside host. Live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { kill, serve, servedSandbox } from "../support/Binary.js"
import { type Api, change, decode, runningMachine, settled, sh } from "../support/Machines.js"
import { hostServer, outsideHost, ownAddresses } from "../support/OutsideHost.js"

/** `GET /` to host:port from inside machine `id`: the body, or `unreachable: <why>`. */
const probe = (api: Api, id: string, host: string, port: number) =>
  Effect.map(
    sh(
      api,
      id,
      `perl -MIO::Socket::INET -e 'my $s = IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => $ARGV[1], Timeout => 3) or do { print "unreachable: $@"; exit 0 }; print $s "GET / HTTP/1.0\\r\\n\\r\\n"; local $/; my $r = <$s>; print defined $r && $r =~ /\\r\\n\\r\\n(.*)$/s ? $1 : "unreachable: no answer"' ${host} ${port}`
    ),
    (operation) => decode(operation.exec_result.stdout_base64)
  )

const bootOf = (api: Api, id: string) => Effect.map(api("GET", `/v1/machines/${id}`), (reply) => reply.body.boot_id)

describe("machine networking", () => {
  it.scopedLive(
    "the outside host with internet access only; never the host, svc, its loopback or another machine; toggled live",
    () =>
      Effect.gen(function*() {
        const outside = yield* outsideHost
        const { api, env } = yield* servedSandbox
        const svcPort = Number(env.SVC_PORT)
        const loopbackPort = yield* hostServer("127.0.0.1", "host loopback")
        const everywherePort = yield* hostServer("0.0.0.0", "host everywhere")

        const offline = yield* runningMachine(api, "offline", { internet_access: false })
        const online = yield* runningMachine(api, "online", { internet_access: true })
        assert.strictEqual(yield* probe(api, online, outside.address, 80), "outside\n")
        assert.match(yield* probe(api, offline, outside.address, 80), /^unreachable/)

        // The offline machine serves a port; it answers itself, and nobody else.
        yield* sh(
          api,
          offline,
          "nohup perl -MIO::Socket::INET -e 'my $l = IO::Socket::INET->new(LocalAddr => q{0.0.0.0:7070}, Listen => 5, ReuseAddr => 1) or die; while (my $c = $l->accept) { print $c qq{HTTP/1.0 200 OK\\r\\n\\r\\nmachine}; close $c }' >/dev/null 2>&1 &"
        )
        let own = ""
        for (let tries = 0; tries < 50 && own !== "machine"; tries++) {
          own = yield* probe(api, offline, "127.0.0.1", 7070)
        }
        assert.strictEqual(own, "machine")

        const closed: Array<readonly [string, number]> = [
          ["127.0.0.1", svcPort],
          ["127.0.0.1", loopbackPort],
          ["10.0.2.2", svcPort],
          ["10.0.2.2", loopbackPort],
          ...ownAddresses().flatMap((address) => [[address, svcPort], [address, everywherePort]] as const),
          ["127.0.0.1", 7070],
          ["10.0.2.2", 7070],
          ["10.0.2.100", 7070]
        ]
        for (const [host, port] of closed) {
          assert.match(yield* probe(api, online, host, port), /^unreachable/, `${host}:${port}`)
        }

        // Toggled on the running machines, both ways: same boots.
        const offlineBoot = yield* bootOf(api, offline)
        const onlineBoot = yield* bootOf(api, online)
        assert.strictEqual(
          (yield* change(api, "PUT", `/v1/machines/${offline}/internet`, { enabled: true })).status,
          "succeeded"
        )
        assert.strictEqual(
          (yield* change(api, "PUT", `/v1/machines/${online}/internet`, { enabled: false })).status,
          "succeeded"
        )
        assert.strictEqual(yield* probe(api, offline, outside.address, 80), "outside\n")
        assert.match(yield* probe(api, online, outside.address, 80), /^unreachable/)
        assert.strictEqual(yield* bootOf(api, offline), offlineBoot)
        assert.strictEqual(yield* bootOf(api, online), onlineBoot)
        // The same setting again changes nothing.
        const again = yield* change(api, "PUT", `/v1/machines/${offline}/internet`, { enabled: true })
        assert.isTrue(again.completed_but_unchanged)
        assert.strictEqual(yield* probe(api, offline, outside.address, 80), "outside\n")
      }),
    // Real sandboxes with their network paths: minutes on a loaded 2-core CI box, not 30 s.
    180_000
  )

  it.scopedLive(
    "svc killed during a toggle converges after its restart; adopted machines keep their network",
    () =>
      Effect.gen(function*() {
        const outside = yield* outsideHost
        const { api, env, first } = yield* servedSandbox
        const id = yield* runningMachine(api, "toggled", { internet_access: false })
        const boot = yield* bootOf(api, id)
        let server = first
        for (const enabled of [true, false, true]) {
          const accepted = yield* api("PUT", `/v1/machines/${id}/internet`, { json: { enabled } })
          assert.strictEqual(accepted.status, 202, accepted.text)
          yield* kill(server)
          server = yield* serve(env)
          const operation = yield* settled(api, accepted.body.operation_id, 30_000)
          assert.strictEqual(operation.status, "succeeded", JSON.stringify(operation))
          const answer = yield* probe(api, id, outside.address, 80)
          if (enabled) assert.strictEqual(answer, "outside\n")
          else assert.match(answer, /^unreachable/)
          assert.strictEqual(yield* bootOf(api, id), boot)
        }
        // Killed with its path up, svc comes back to a machine that still has it.
        yield* kill(server)
        yield* serve(env)
        assert.strictEqual(yield* probe(api, id, outside.address, 80), "outside\n")
      }),
    180_000
  )
})
