/**
 * The real command-line agents for the tests: installed once into a cache folder outside the
 * repository (`$SVC_TEST_AGENTS_DIR`, default `$HOME/.cache/svc-test-agents`) with the same code as
 * `svc agents install`, and reused across runs. Test files running at once wait on a lock folder.
 */
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { ensureInstalled } from "../../src/agents/providers/Tools.js"
import type { AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import { client } from "./Http.js"
import { type Api, eventually, runningMachine } from "./Machines.js"
import { anthropicServer } from "./ModelServers.js"
import { startServer } from "./TestServer.js"

export const testAgentsDir = process.env.SVC_TEST_AGENTS_DIR ??
  NodePath.join(NodeOs.homedir(), ".cache", "svc-test-agents")

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Installs the agents unless they are there at this build's versions; answers the folder. */
export const installTestAgents = async (): Promise<string> => {
  NodeFs.mkdirSync(NodePath.dirname(testAgentsDir), { recursive: true })
  const lock = `${testAgentsDir}.lock`
  const deadline = Date.now() + 10 * 60_000
  while (true) {
    try {
      NodeFs.mkdirSync(lock)
      break
    } catch {
      // Another test file is installing; a lock older than the deadline is left over from a crash.
      const age = Date.now() - (NodeFs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now())
      if (age > 10 * 60_000) NodeFs.rmSync(lock, { recursive: true, force: true })
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`)
      await sleep(500)
    }
  }
  try {
    ensureInstalled(testAgentsDir, (line) => process.stderr.write(`agents: ${line}\n`))
  } finally {
    NodeFs.rmSync(lock, { recursive: true, force: true })
  }
  return testAgentsDir
}

/** POSTs a prompt to the machine's agents (with an idempotency key when given). */
export const prompt = (api: Api, machineId: string, body: Record<string, unknown>, key?: string) =>
  api("POST", `/v1/machines/${machineId}/agents/prompt`, {
    json: body,
    ...(key === undefined ? {} : { headers: { "idempotency-key": key } })
  })

/** The conversation's events once the turn has finished (long-polling the JSON route). */
export const finishedTurn = (api: Api, machineId: string, conversationId: string, turnId: string, timeoutMs: number) =>
  eventually(
    Effect.map(
      api("GET", `/v1/machines/${machineId}/agents/events?conversation_id=${conversationId}&wait_seconds=2`),
      (reply) =>
        reply.body?.latest_turn?.turn_id === turnId && reply.body.active === false &&
          reply.body.events.at(-1)?.type === "idle"
          ? reply.body
          : undefined
    ),
    timeoutMs
  )

/**
 * A sandbox server whose machines may reach a scripted Anthropic server on the host, an owner, and
 * a running machine whose environment points `claude` at it (what the agent tests start from).
 */
export const claudeMachine = (overrides: Partial<AppConfigShape> = {}) =>
  Effect.gen(function*() {
    const model = yield* anthropicServer
    const server = yield* startServer({
      runtime: "sandbox",
      secretKeys: { kind: "given", keys: [Redacted.make(NodeCrypto.randomBytes(32))] },
      agentsDir: testAgentsDir,
      machineNetwork: { lan: false, hostPorts: [model.port] },
      ...overrides
    })
    const owner = yield* server.bootstrap("agents@example.com")
    const api = client(server.url, { key: owner.api_key })
    const environment = yield* api("POST", "/v1/environments", {
      json: { name: "keys", variables: { ANTHROPIC_BASE_URL: model.machineUrl, ANTHROPIC_API_KEY: "sk-ant-test" } }
    })
    if (environment.status !== 201) return yield* Effect.dieMessage(`environment: ${environment.text}`)
    const machineId = yield* runningMachine(api, "agents", {
      environment_id: environment.body.id,
      internet_access: true
    })
    return { model, server, owner, api, machineId, auth: { authorization: `Bearer ${owner.api_key}` } }
  })
