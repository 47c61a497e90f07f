/**
 * Suspension while work runs in the machine: an agent turn (the real `claude` against a scripted
 * model server whose stream hangs), an exec (`sleep 300`) and a terminal (with an unused ticket
 * beside it) are all running when the operator suspends the organization; all three end, the
 * ticket is void, the machine is stopped, and a new prompt is refused.
 * Real sandboxes, live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { beforeAll } from "vitest"
import { claudeMachine, installTestAgents, prompt } from "../support/Agents.js"
import { client } from "../support/Http.js"
import { eventually, settled } from "../support/Machines.js"
import { mustOpen, openTerminal } from "../support/Terminals.js"

beforeAll(() => installTestAgents(), 10 * 60_000)

const token = "operator-token-for-agent-tests"

describe("suspension with running work", () => {
  it.scopedLive(
    "suspension ends a running agent turn, a running exec and an open terminal",
    () =>
      Effect.gen(function*() {
        const { api, machineId, model, owner, server } = yield* claudeMachine({
          operatorToken: Option.some(Redacted.make(token))
        })

        const turn = yield* prompt(api, machineId, { provider: "claude_code", text: "HANG" })
        assert.strictEqual(turn.status, 202, turn.text)
        yield* eventually(Effect.sync(() => (model.hanging() > 0 ? true : undefined)), 90_000)
        const exec = yield* api("POST", `/v1/machines/${machineId}/exec`, { json: { shell: "sleep 300" } })
        assert.strictEqual(exec.status, 202, exec.text)
        yield* eventually(
          Effect.map(api("GET", `/v1/operations/${exec.body.operation_id}`), (reply) =>
            reply.body.status === "running" ? true : undefined)
        )

        const terminalTicket = () =>
          Effect.map(api("POST", `/v1/machines/${machineId}/terminals`, { json: {} }), (reply) => {
            assert.strictEqual(reply.status, 201, reply.text)
            return reply.body.url as string
          })
        const terminal = yield* mustOpen(yield* terminalTicket())
        yield* terminal.type("echo ready-$((40+2))\r")
        yield* terminal.waitFor("ready-42")
        const unused = yield* terminalTicket()

        const suspended = yield* client(server.url, { headers: { "x-svc-operator-token": token } })(
          "POST",
          `/v1/operator/organizations/${owner.organization_id}/suspend`,
          { json: { operator: "ops", reason: "abuse report" } }
        )
        assert.strictEqual(suspended.status, 200, suspended.text)
        assert.strictEqual(suspended.body.machines_stopping, 1)
        assert.deepStrictEqual([suspended.body.channels_revoked, suspended.body.tickets_revoked], [1, 1])
        assert.strictEqual(yield* terminal.closed, 4403)
        assert.deepStrictEqual(yield* openTerminal(unused), { refused: 404 })

        const execDone = yield* settled(api, exec.body.operation_id, 60_000)
        assert.deepStrictEqual([execDone.status, execDone.error_code], ["failed", "cancelled"])
        const ended = yield* eventually(
          Effect.map(
            api("GET", `/v1/machines/${machineId}/agents/events?conversation_id=${turn.body.conversation_id}`),
            (reply) =>
              reply.body?.active === false && reply.body.latest_turn?.status !== "running" ? reply.body : undefined
          ),
          60_000
        )
        assert.strictEqual(ended.latest_turn.status, "failed", JSON.stringify(ended.latest_turn))
        yield* eventually(Effect.sync(() => (model.hanging() === 0 ? true : undefined)), 30_000)
        const machine = yield* eventually(
          Effect.map(api("GET", `/v1/machines/${machineId}`), (reply) =>
            reply.body?.state === "stopped" ? reply.body : undefined)
        )
        assert.strictEqual(machine.last_stop_reason, "suspension")
        const again = yield* prompt(api, machineId, { conversation_id: turn.body.conversation_id, text: "more" })
        assert.strictEqual(again.status, 403)
        assert.strictEqual(again.body.code, "organization_suspended")
      }),
    240_000
  )
})
