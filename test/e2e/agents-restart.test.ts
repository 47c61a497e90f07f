/**
 * No agent process outlives the server: `svc serve` stopped politely ends its turns' agents (the
 * turn fails `server_stopped`); killed with SIGKILL it cannot, and the agent keeps running in the
 * machine (machines outlive svc by design) until the next start kills it and fails the turn
 * `server_restarted`. The real claude in a sandbox against a hanging scripted model. Live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as NodeChild from "node:child_process"
import { beforeAll } from "vitest"
import { turnMarker } from "../../src/agents/providers/TurnRunner.js"
import { pidsWithEnv } from "../../src/drivers/HostProcess.js"
import { installTestAgents, testAgentsDir } from "../support/Agents.js"
import { kill, nodeEnv, run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { type Api, eventually, runningMachine } from "../support/Machines.js"
import { anthropicServer } from "../support/ModelServers.js"

beforeAll(() => installTestAgents(), 10 * 60_000)

/** SIGTERM, as a service manager stops svc, and waits for the exit. */
const stopPolitely = (child: NodeChild.ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.on("exit", () => resume(Effect.void))
    child.kill("SIGTERM")
  })

const turnOf = (api: Api, machineId: string, conversationId: string) =>
  Effect.map(
    api("GET", `/v1/machines/${machineId}/agents/events?conversation_id=${conversationId}`),
    (reply) => reply.body.latest_turn
  )

describe("agents across svc restarts", () => {
  it.scopedLive(
    "a polite stop ends the agents; after a SIGKILL the next start kills them",
    () =>
      Effect.gen(function*() {
        const model = yield* anthropicServer
        const { dataDir, env, url } = yield* nodeEnv({
          SVC_AGENTS_DIR: testAgentsDir,
          SVC_MACHINE_HOST_PORTS: String(model.port)
        })
        const first = yield* serve(env)
        const boot = yield* run(["admin", "bootstrap", "--email", "agents@example.com", "--data-dir", dataDir])
        const api = client(url, { key: JSON.parse(boot.stdout).api_key })
        const environment = yield* api("POST", "/v1/environments", {
          json: { name: "keys", variables: { ANTHROPIC_BASE_URL: model.machineUrl, ANTHROPIC_API_KEY: "sk-ant-test" } }
        })
        assert.strictEqual(environment.status, 201, environment.text)
        const machineId = yield* runningMachine(api, "agents", { environment_id: environment.body.id })

        const a = yield* api("POST", `/v1/machines/${machineId}/agents/prompt`, {
          json: { provider: "claude_code", text: "HANG" }
        })
        assert.strictEqual(a.status, 202, a.text)
        const conversationId = a.body.conversation_id
        yield* eventually(Effect.sync(() => model.hanging() > 0 ? true : undefined), 60_000)
        assert.isAbove(pidsWithEnv(turnMarker, a.body.turn_id).length, 0)
        yield* stopPolitely(first)
        assert.deepStrictEqual(pidsWithEnv(turnMarker, a.body.turn_id), [], "no agent process after a polite stop")

        const second = yield* serve(env)
        const afterStop = yield* turnOf(api, machineId, conversationId)
        assert.strictEqual(afterStop.status, "failed")
        assert.strictEqual(afterStop.error_code, "server_stopped")
        yield* eventually(Effect.sync(() => model.hanging() === 0 ? true : undefined))
        const b = yield* api("POST", `/v1/machines/${machineId}/agents/prompt`, {
          json: { conversation_id: conversationId, text: "HANG" }
        })
        assert.strictEqual(b.status, 202, b.text)
        yield* eventually(Effect.sync(() => model.hanging() > 0 ? true : undefined), 60_000)
        yield* kill(second)
        assert.isAbove(pidsWithEnv(turnMarker, b.body.turn_id).length, 0, "the agent outlives a SIGKILL of svc")

        yield* serve(env)
        const afterCrash = yield* eventually(
          Effect.map(turnOf(api, machineId, conversationId), (turn) => turn.status === "failed" ? turn : undefined)
        )
        assert.strictEqual(afterCrash.error_code, "server_restarted")
        assert.deepStrictEqual(pidsWithEnv(turnMarker, b.body.turn_id), [], "the next start killed it")
      }),
    180_000
  )
})
