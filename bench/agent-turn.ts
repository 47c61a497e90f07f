/**
 * Agent turn latency: `POST /v1/machines/{id}/agents/prompt` to the end of its SSE stream (`idle`),
 * per provider, against a scripted model server on loopback that answers at once, on the sandbox
 * driver. Baseline, same run: the same agent command line run directly in the same sandbox
 * (`nsenter`, what the driver does) with the same environment, no HTTP, database or event mapping:
 * the difference is what svc adds to a turn.
 *
 *   node --import tsx bench/agent-turn.ts [turns=10]
 */
import { Effect, Exit, Scope } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { performance } from "node:perf_hooks"
import { Pool } from "undici"
import { providers } from "../src/agents/providers/Providers.js"
import { installTestAgents, testAgentsDir } from "../test/support/Agents.js"
import { anthropicServer, openaiServer } from "../test/support/ModelServers.js"
import { createMachine, httpClient, ms, serve, settled, summary } from "./support.js"

const turns = Number(process.argv[2] ?? 10)

const main = async () => {
  await installTestAgents()
  const scope = Effect.runSync(Scope.make())
  const anthropic = await Effect.runPromise(Scope.extend(anthropicServer, scope))
  const openai = await Effect.runPromise(Scope.extend(openaiServer, scope))
  const served = await serve({ SVC_RUNTIME: "sandbox", SVC_AGENTS_DIR: testAgentsDir })
  const client = httpClient(served, 4)
  const events = new Pool(served.url, { connections: 2 })
  const variables = {
    ANTHROPIC_BASE_URL: anthropic.url,
    ANTHROPIC_API_KEY: "sk-ant-bench",
    OPENAI_BASE_URL: `${openai.url}/v1`,
    OPENAI_API_KEY: "sk-bench"
  }
  try {
    const environment = await client.call("POST", "/v1/environments", { name: "keys", variables })
    if (environment.status !== 201) throw new Error(JSON.stringify(environment.body))
    const created = await createMachine(client, "agents", {
      environment_id: environment.body.id,
      internet_access: true
    })
    await settled(client, created.operation_id, 5)
    const machineId = created.machine_id
    const run = JSON.parse(
      NodeFs.readFileSync(NodePath.join(served.dataDir, "machines", machineId, "run.json"), "utf8")
    )
    const pid = Number(run.pid)

    const cases = [
      { provider: "claude_code" as const, model: "claude-sonnet-4-5" },
      { provider: "codex" as const, model: "gpt-5" },
      { provider: "opencode" as const, model: "anthropic/claude-sonnet-4-5" }
    ]
    for (const test of cases) {
      const viaApi: Array<number> = []
      for (let i = 0; i <= turns; i++) {
        const t0 = performance.now()
        // A new conversation each time, as the direct runs start a new session each time.
        const accepted = await client.call("POST", `/v1/machines/${machineId}/agents/prompt`, {
          provider: test.provider,
          model: test.model,
          text: `say hi ${i}`
        })
        if (accepted.status !== 202) throw new Error(JSON.stringify(accepted.body))
        const conversationId = accepted.body.conversation_id
        const stream = await events.request({
          method: "GET",
          path: `/v1/machines/${machineId}/agents/events?conversation_id=${conversationId}`,
          headers: { authorization: `Bearer ${served.apiKey}`, accept: "text/event-stream" }
        })
        const text = await stream.body.text()
        if (!text.includes("\"outcome\":\"completed\"")) throw new Error(`${test.provider}: ${text.slice(-600)}`)
        if (i > 0) viaApi.push(performance.now() - t0) // the first turn warms the agent's caches
      }
      // The same command line and environment, straight into the sandbox.
      const provider = providers[test.provider]
      const direct: Array<number> = []
      for (let i = 0; i <= turns; i++) {
        const plan = provider.plan({
          tools: "/svc/agents",
          text: `say hi ${i}`,
          inputId: crypto.randomUUID(),
          model: test.model,
          effort: null,
          sessionId: null
        })
        const t0 = performance.now()
        await new Promise<void>((resolve, reject) => {
          const child = NodeChild.spawn(
            "nsenter",
            [
              "-t",
              String(pid),
              "-a",
              "-r",
              "--wdns=/root",
              "--",
              "env",
              ...Object.entries({ ...variables, ...plan.env, HOME: "/root", PATH: "/usr/local/bin:/usr/bin:/bin" }).map(
                ([k, v]) => `${k}=${v}`
              ),
              ...plan.argv
            ],
            { stdio: ["pipe", "ignore", "ignore"] }
          )
          child.stdin!.end(plan.stdin.map((line) => `${line}\n`).join(""))
          child.on(
            "exit",
            (code) =>
              code === 0 || test.provider === "claude_code"
                ? resolve()
                : reject(new Error(`${test.provider} exited ${code}`))
          )
        })
        if (i > 0) direct.push(performance.now() - t0)
      }
      const api = summary(viaApi)
      const raw = summary(direct)
      console.log(
        `${test.provider.padEnd(12)} prompt to idle via API: p50 ${ms(api.p50)}  max ${
          ms(api.max)
        }   direct in the sandbox: p50 ${ms(raw.p50)}  max ${ms(raw.max)}   svc adds p50 ${
          ms(api.p50 - raw.p50)
        }  (${turns} turns)`
      )
    }
  } finally {
    await events.close()
    await client.close()
    await served.stop()
    NodeChild.execFileSync(process.execPath, ["--import", "tsx", "bench/cleanup.ts", served.dataDir])
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

await main()
