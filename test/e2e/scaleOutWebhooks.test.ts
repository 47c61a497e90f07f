/**
 * The webhook sender is once-only work across nodes (docs/scale-out.md "Once-only work and
 * wake-ups across nodes"): two `svc serve` on one PostgreSQL, each with its own data dir. Node a
 * starts first and so holds the sender; a burst of machine.created events is accepted through node
 * b (whose events wake a's sender through pg_notify), and a is killed with SIGKILL midway. b takes
 * the sender over: every event accepted reaches the endpoint, an event delivered twice carries the
 * same webhook-id both times. A few hundred events keep CI short (the 10,000: bench/).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeCrypto from "node:crypto"
import { destroyMachines, kill, run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { eventually } from "../support/Machines.js"
import { startPostgres } from "../support/Postgres.js"
import { httpReceiver, webhookIdsByMachine } from "../support/Receivers.js"
import { freePort, tempDir } from "../support/TestServer.js"

const burst = Number(process.env.BURST ?? 150)

describe("two nodes on PostgreSQL: the webhook sender's node killed", () => {
  it.scopedLive(
    "another node takes the sender over: none lost, duplicates carry the same webhook-id",
    () =>
      Effect.gen(function*() {
        const server = yield* startPostgres
        const url = yield* server.database("senders")
        const keys = NodeCrypto.randomBytes(32).toString("base64")
        const nodeEnv = (host: string) =>
          Effect.gen(function*() {
            const dataDir = yield* tempDir
            yield* Effect.addFinalizer(() => destroyMachines(dataDir, "process"))
            const port = yield* freePort
            return {
              port,
              env: {
                SVC_DATA_DIR: dataDir,
                SVC_PORT: String(port),
                // Process driver: the burst makes hundreds of machines; the outbox is under test.
                SVC_RUNTIME: "process",
                SVC_BILLING: "unlimited",
                SVC_DATABASE_URL: url,
                SVC_SECRET_KEYS: keys,
                // Two live nodes never share a host (the second would fence the first).
                SVC_HOST_ID: host,
                SVC_WEBHOOK_ALLOW_PRIVATE: "true",
                SVC_LIMITS: JSON.stringify({ unlimited: { starts_per_hour: 100000 } })
              }
            }
          })
        const a = yield* nodeEnv("host-a")
        const b = yield* nodeEnv("host-b")
        const receiver = yield* httpReceiver()
        // a alone first: it takes the sender (a waiting name is tried at once); b, started after, waits.
        const first = yield* serve(a.env)
        yield* serve(b.env)
        const boot = yield* run(["admin", "bootstrap", "--email", "nodes@example.com"], b.env)
        assert.strictEqual(boot.code, 0, boot.stderr)
        const api = client(`http://127.0.0.1:${b.port}`, { key: JSON.parse(boot.stdout).api_key })
        const made = yield* api("POST", "/v1/webhooks", {
          json: { name: "nodes", url: receiver.url, events: ["machine.created"] }
        })
        assert.strictEqual(made.status, 201)

        // The burst through b, 25 at a time; a is killed once a third of it was delivered.
        const accepted = new Set<string>()
        let killed = false
        let deliveredAtKill = 0
        const one = (i: number) =>
          Effect.gen(function*() {
            const reply = yield* api("POST", "/v1/machines", { json: { name: `b${i}`, start: false } })
            assert.strictEqual(reply.status, 202)
            accepted.add(reply.body.machine_id)
            if (!killed && receiver.received.length >= burst / 3) {
              killed = true
              deliveredAtKill = receiver.received.length
              yield* kill(first)
            }
          })
        yield* Effect.forEach(Array.from({ length: burst }, (_, i) => i), one, { concurrency: 25, discard: true })
        // The sender may not have reached a third by the burst's end: a is killed now then.
        if (!killed) {
          deliveredAtKill = receiver.received.length
          yield* kill(first)
        }

        const created = () => new Set(receiver.received.map((r) => JSON.parse(r.body).data.id))
        yield* eventually(Effect.sync(() => [...accepted].every((id) => created().has(id)) || undefined), 60_000)
        for (const [machine, ids] of webhookIdsByMachine(receiver, made.body.secret)) {
          assert.strictEqual(ids.size, 1, `machine ${machine}: one webhook-id`)
        }
        console.log(
          `accepted ${accepted.size}; delivered before the kill ${deliveredAtKill}, in all ${receiver.received.length}`
        )
      }),
    180_000
  )
})
