/**
 * Forwarding across nodes (docs/scale-out.md "Forwarding"): two `svc serve` on one PostgreSQL, a
 * machine created through node b (so on host-b), used through node a: an exec's events followed
 * live, its stats, a terminal over WebSocket, the port proxy; then b killed: through a, reads
 * answer 200 and an exec 202, while a terminal, the port, stats and a live stream answer 503
 * host_unavailable with Retry-After; b restarted runs the accepted exec. Attacks: a client's own
 * `svc-node` (forged, or signed for another path) gains no trust; a signed request is not
 * forwarded twice. The process driver: what is under test is which node serves, not isolation (a
 * process machine of host-b is unknown to a's driver, so only b can serve it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeHttp from "node:http"
import { AppConfig } from "../../src/kernel/config/AppConfig.js"
import { signNodeRequest } from "../../src/kernel/crypto/NodeRequests.js"
import { SecretBox } from "../../src/kernel/crypto/SecretBox.js"
import { kill, nodeEnv, run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { change, decode, readEvents, runningMachine, settled } from "../support/Machines.js"
import { startPostgres } from "../support/Postgres.js"
import { mustOpen, openTerminal } from "../support/Terminals.js"
import { freePort, testConfig } from "../support/TestServer.js"

describe("two nodes on PostgreSQL: requests forwarded to the machine's node", () => {
  it.scopedLive(
    "live streams, terminals, ports and stats through another node; 503 host_unavailable while its node is gone",
    () =>
      Effect.gen(function*() {
        const server = yield* startPostgres
        const url = yield* server.database("forwarding")
        const keys = NodeCrypto.randomBytes(32).toString("base64")
        const node = (host: string) =>
          Effect.gen(function*() {
            const made = yield* nodeEnv({
              SVC_RUNTIME: "process",
              SVC_DATABASE_URL: url,
              SVC_SECRET_KEYS: keys,
              SVC_HOST_ID: host
            })
            // Where the other node reaches this one (the default, the base URL, says the same here).
            return { ...made, env: { ...made.env, SVC_INTERNAL_URL: made.url } }
          })
        const a = yield* node("host-a")
        const b = yield* node("host-b")
        yield* serve(a.env)
        const bProcess = yield* serve(b.env)
        const boot = yield* run(["admin", "bootstrap", "--email", "nodes@example.com"], b.env)
        assert.strictEqual(boot.code, 0, boot.stderr)
        const key = JSON.parse(boot.stdout).api_key as string
        const viaA = client(a.url, { key })
        const viaB = client(b.url, { key })

        const id = yield* runningMachine(viaB, "on-b")
        assert.strictEqual((yield* viaA("GET", `/v1/machines/${id}`)).body.host_id, "host-b")

        // An exec through a, its events followed through a while it runs (they are woken on b).
        const exec = yield* viaA("POST", `/v1/machines/${id}/exec`, { json: { shell: "echo one; sleep 1; echo two" } })
        assert.strictEqual(exec.status, 202, exec.text)
        const followed = yield* readEvents(`${a.url}/v1/operations/${exec.body.operation_id}/events`, {
          authorization: `Bearer ${key}`
        })
        assert.strictEqual(followed.status, 200)
        const output = followed.events.filter((event) => event.event === "output")
          .map((event) => decode(event.data.data_base64)).join("")
        assert.strictEqual(output, "one\ntwo\n")
        assert.strictEqual(followed.events.at(-1)?.event, "end")

        // Stats read on b (a's driver does not know the machine: it would say it does not run).
        const stats = yield* viaA("GET", `/v1/machines/${id}/stats`)
        assert.strictEqual(stats.status, 200, stats.text)
        assert.strictEqual(stats.body.state, "running")

        // A terminal through a: the ticket is the database's, the WebSocket is piped to b.
        const ticket = yield* viaA("POST", `/v1/machines/${id}/terminals`, { json: {} })
        assert.strictEqual(ticket.status, 201, ticket.text)
        const terminalUrl = (ticket.body.url as string).replace(/^ws:\/\/[^/]+/, a.url.replace("http", "ws"))
        const terminal = yield* mustOpen(terminalUrl)
        yield* terminal.type("echo fwd-$((40 + 2))\n")
        yield* terminal.waitFor("fwd-42")
        terminal.ws.close()

        // The port proxy through a. The process driver reaches a machine's port on the host's
        // loopback, so the test's own server stands for the machine's; a's driver refuses it (it
        // does not run the machine): only b can answer.
        const port = yield* freePort
        const listening = NodeHttp.createServer((_request, response) => {
          response.writeHead(201)
          response.end("from the machine")
        })
        yield* Effect.acquireRelease(
          Effect.async<void>((resume) => void listening.listen(port, "127.0.0.1", () => resume(Effect.void))),
          () => Effect.sync(() => listening.close())
        )
        const exposed = yield* change(viaA, "POST", `/v1/machines/${id}/ports`, { port, public: false })
        assert.strictEqual(exposed.status, "succeeded", JSON.stringify(exposed))
        const proxied = yield* viaA("GET", `/v1/machines/${id}/ports/${port}/http/`)
        assert.strictEqual(proxied.status, 201, proxied.text)
        assert.strictEqual(proxied.text, "from the machine")

        // Attacks: a client's own svc-node is no signature (a forged one, one signed for another
        // path): a forwards as for anyone. A request a node signed is not forwarded again: 503.
        const box = SecretBox.layer.pipe(Layer.provide(Layer.succeed(AppConfig, {
          ...testConfig("/nonexistent-data-dir", 9),
          secretKeys: { kind: "given", keys: [Redacted.make(Buffer.from(keys, "base64"))] }
        })))
        const statsPath = `/v1/machines/${id}/stats`
        const otherPath = yield* Effect.provide(signNodeRequest("GET", `/v1/machines/${id}`, "host-b", "10.9.9.9"), box)
        const forged = `host-b.${Math.floor(Date.now() / 1000)}.${"A".repeat(43)}`
        for (const header of [forged, otherPath]) {
          const reply = yield* viaA("GET", statsPath, {
            headers: { "svc-node": header, "svc-node-client": "10.9.9.9" }
          })
          assert.strictEqual(reply.status, 200, `${header}: ${reply.text}`)
        }
        const signed = yield* Effect.provide(signNodeRequest("GET", statsPath, "host-b", "10.9.9.9"), box)
        const twice = yield* viaA("GET", statsPath, { headers: { "svc-node": signed, "svc-node-client": "10.9.9.9" } })
        assert.strictEqual(twice.status, 503, twice.text)
        assert.strictEqual(twice.body.code, "host_unavailable")

        // b gone: reads and accepts through a; what needs the host answers 503 with Retry-After.
        yield* kill(bProcess)
        assert.strictEqual((yield* viaA("GET", `/v1/machines/${id}`)).status, 200)
        const queued = yield* viaA("POST", `/v1/machines/${id}/exec`, { json: { shell: "echo after" } })
        assert.strictEqual(queued.status, 202, queued.text)
        const refusals = [
          yield* viaA("GET", `/v1/machines/${id}/stats`),
          yield* viaA("GET", `/v1/machines/${id}/ports/${port}/http/`),
          yield* viaA("GET", `/v1/operations/${queued.body.operation_id}/events`)
        ]
        for (const reply of refusals) {
          assert.strictEqual(reply.status, 503, reply.text)
          assert.strictEqual(reply.body.code, "host_unavailable")
          assert.strictEqual(reply.headers.get("retry-after"), "5")
        }
        const finished = yield* viaA("GET", `/v1/operations/${exec.body.operation_id}/events`)
        assert.strictEqual(finished.status, 200, "a finished operation's events are the database's")
        const later = yield* viaA("POST", `/v1/machines/${id}/terminals`, { json: {} })
        assert.strictEqual(later.status, 201, later.text)
        const refused = yield* openTerminal(
          (later.body.url as string).replace(/^ws:\/\/[^/]+/, a.url.replace("http", "ws"))
        )
        assert.deepStrictEqual(refused, { refused: 503 })

        // b back: the exec accepted meanwhile runs.
        yield* serve(b.env)
        const ran = yield* settled(viaA, queued.body.operation_id, 60_000)
        assert.strictEqual(ran.status, "succeeded", JSON.stringify(ran))
        assert.strictEqual(decode(ran.exec_result.stdout_base64), "after\n")
      }),
    180_000
  )
})
