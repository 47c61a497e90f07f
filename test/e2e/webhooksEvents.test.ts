/**
 * The events produced since the outbox covered machines and operations: `snapshot.ready` (the
 * actor's settle), `snapshot.failed` (a cancelled push, settled by the snapshots' bookkeeping) and
 * `agent.turn_finished` (a turn that fails at once without a provider key), each delivered to a
 * real receiver, verified with the `standardwebhooks` package, `data` being the resource as the
 * API answers it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import { Webhook } from "standardwebhooks"
import { beforeAll } from "vitest"
import { finishedTurn, installTestAgents, prompt, testAgentsDir } from "../support/Agents.js"
import { client } from "../support/Http.js"
import { change, eventually, runningMachine, settled } from "../support/Machines.js"
import { httpReceiver, type Receiver } from "../support/Receivers.js"
import { startServer } from "../support/TestServer.js"

beforeAll(() => installTestAgents(), 10 * 60_000)

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

/** The verified payloads of type `type`, once there are `n`. */
const payloads = (receiver: Receiver, secret: string, type: string, n = 1) =>
  eventually(
    Effect.sync(() => {
      const verifier = new Webhook(secret)
      const found = receiver.received
        .map((r) => verifier.verify(r.body, r.headers) as { type: string; timestamp: string; data: any })
        .filter((payload) => payload.type === type)
      return found.length >= n ? found : undefined
    }),
    60_000
  )

describe("webhooks: snapshot and agent events", () => {
  it.scopedLive(
    "snapshot.ready, snapshot.failed and agent.turn_finished carry their resource, signed",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ secretKeys, agentsDir: testAgentsDir })
        const owner = yield* server.bootstrap("events@example.com")
        const api = client(server.url, { key: owner.api_key })
        const receiver = yield* httpReceiver()
        const made = yield* api("POST", "/v1/webhooks", {
          json: { name: "all", url: receiver.url, events: ["snapshot.ready", "snapshot.failed", "agent.turn_finished"] }
        })
        assert.strictEqual(made.status, 201, made.text)
        const secret = made.body.secret

        // A push of a stopped machine: ready.
        const machineId = yield* runningMachine(api, "snap")
        yield* change(api, "POST", `/v1/machines/${machineId}/stop`)
        const push = yield* api("POST", `/v1/machines/${machineId}/snapshots`, { json: {} })
        assert.strictEqual(push.status, 202, push.text)
        yield* settled(api, push.body.operation_id)
        const [ready] = yield* payloads(receiver, secret, "snapshot.ready")
        assert.deepStrictEqual(ready!.data, (yield* api("GET", `/v1/snapshots/${push.body.snapshot_id}`)).body)
        assert.strictEqual(ready!.data.status, "ready")

        // A push held behind a long exec, cancelled while pending: failed.
        yield* change(api, "POST", `/v1/machines/${machineId}/start`)
        const busy = yield* api("POST", `/v1/machines/${machineId}/exec`, { json: { shell: "sleep 3" } })
        assert.strictEqual(busy.status, 202)
        assert.strictEqual((yield* api("POST", `/v1/machines/${machineId}/stop`)).status, 202)
        const doomed = yield* api("POST", `/v1/machines/${machineId}/snapshots`, { json: {} })
        assert.strictEqual(doomed.status, 202, doomed.text)
        assert.strictEqual((yield* api("POST", `/v1/operations/${doomed.body.operation_id}/cancel`)).status, 202)
        const [failed] = yield* payloads(receiver, secret, "snapshot.failed")
        assert.strictEqual(failed!.data.id, doomed.body.snapshot_id)
        assert.strictEqual(failed!.data.status, "failed")
        assert.deepStrictEqual(failed!.data, (yield* api("GET", `/v1/snapshots/${doomed.body.snapshot_id}`)).body)

        // A turn without a provider key fails at once: agent.turn_finished with the turn.
        yield* change(api, "POST", `/v1/machines/${machineId}/start`)
        const started = yield* prompt(api, machineId, { provider: "claude_code", text: "hello" })
        assert.strictEqual(started.status, 202, started.text)
        const done = yield* finishedTurn(api, machineId, started.body.conversation_id, started.body.turn_id, 60_000)
        const [turn] = yield* payloads(receiver, secret, "agent.turn_finished")
        assert.strictEqual(turn!.data.turn_id, started.body.turn_id)
        assert.strictEqual(turn!.data.status, done.latest_turn.status)
        assert.deepStrictEqual(turn!.data, done.latest_turn)

        // One delivery each, listed with its machine.
        const listed = yield* eventually(Effect.map(
          api("GET", `/v1/webhooks/${made.body.webhook.id}/deliveries`),
          (reply) => reply.body.items.every((d: any) => d.status === "succeeded") ? reply.body.items : undefined
        ))
        assert.deepStrictEqual(
          listed.map((d: any) => [d.event_type, d.machine_id, d.operation_id]).sort(),
          [
            ["agent.turn_finished", machineId, null],
            ["snapshot.failed", machineId, doomed.body.operation_id],
            ["snapshot.ready", machineId, push.body.operation_id]
          ]
        )
      }),
    { timeout: 180_000 }
  )
})
