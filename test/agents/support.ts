/**
 * The agents service over a temporary SQLite file, the real `process` driver and a stand-in codex
 * (a shell script in a tools folder of its own: the real agents are in test/e2e). The machines area
 * is stood in for by its one call the agents make, `find`, over machines the test declares.
 * Process driver: the turn runner's signals and process groups are judged from the host's own
 * process table; the real agents run on the sandbox in test/e2e/agents*.test.ts.
 */
import { assert } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { Agents } from "../../src/agents/Agents.js"
import { AgentConversationsRepo } from "../../src/agents/ConversationsRepo.js"
import { AgentsLive } from "../../src/agents/Live.js"
import { MachineDriver } from "../../src/drivers/MachineDriver.js"
import * as ProcessDriver from "../../src/drivers/process/ProcessDriver.js"
import { AppConfig } from "../../src/kernel/config/AppConfig.js"
import type { MachineState } from "../../src/kernel/domain/MachineStates.js"
import { DomainEvents } from "../../src/kernel/events/DomainEvents.js"
import { EventRecorders } from "../../src/kernel/events/EventRecorders.js"
import { ResourceNotFound } from "../../src/kernel/http/Errors.js"
import * as Database from "../../src/kernel/sql/Database.js"
import { GroupCommit } from "../../src/kernel/sql/GroupCommit.js"
import * as HostLease from "../../src/kernel/sql/HostLease.js"
import { HostsRepo } from "../../src/kernel/sql/HostsRepo.js"
import type { Requester } from "../../src/kernel/sql/Idempotency.js"
import { IdempotencyKeysRepo } from "../../src/kernel/sql/IdempotencyKeysRepo.js"
import { Machines } from "../../src/machines/Machines.js"
import { EngineReads } from "../../src/runtime/EngineReads.js"
import { MachinesRepo } from "../../src/runtime/MachinesRepo.js"
import { OperationsRepo } from "../../src/runtime/OperationsRepo.js"
import { eventually } from "../support/Machines.js"
import { tempDir, testConfig } from "../support/TestServer.js"

/**
 * A stand-in `codex exec --json ... -- PROMPT`: it starts a thread, then answers at once, or with a
 * prompt starting with "wait" runs until it is stopped (a turn that stays running).
 */
const standInCodex = `#!/bin/sh
for prompt; do :; done
echo '{"type":"thread.started","thread_id":"thread-1"}'
case "$prompt" in
  wait*) while :; do sleep 1; done ;;
esac
echo '{"type":"item.completed","item":{"id":"item-1","type":"agent_message","text":"done"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}'
`

export const organizationId = "org-1"

export const requester = (idempotencyKey?: string): Requester => ({
  organizationId,
  userId: "user-1",
  idempotencyKey
})

/** A machine of the test's organization, booted by the process driver when `state` is running. */
export interface TestMachine {
  readonly id: string
  readonly state: MachineState
}

/**
 * The agents service of a data dir, a fresh one unless `dir` is given (in the test's scope, so its
 * Clock is the test's).
 */
export const agentsWith = (machines: ReadonlyArray<TestMachine>, dir?: string) =>
  Effect.gen(function*() {
    if (dir === undefined) dir = yield* tempDir
    const agentsDir = NodePath.join(dir, "agents")
    const codex = NodePath.join(agentsDir, "node_modules", ".bin", "codex")
    NodeFs.mkdirSync(NodePath.dirname(codex), { recursive: true })
    NodeFs.writeFileSync(codex, standInCodex, { mode: 0o755 })
    const driver = ProcessDriver.make({ dataDir: dir, agentsDir })
    const database = NodePath.join(dir, "svc.db")
    for (const machine of machines.filter((machine) => machine.state === "running")) {
      // The stand-in codex needs no key, but a turn without one in the machine's environment fails.
      const env = { OPENAI_API_KEY: "sk-test" }
      const spec = { id: machine.id, size: "small" as const, image: "default", internetAccess: true, env }
      yield* driver.create(spec)
      yield* driver.start(spec)
      yield* Effect.addFinalizer(() => Effect.ignore(driver.destroy(machine.id)))
    }
    const find = (organization: string, machineId: string) => {
      const machine = machines.find((machine) => machine.id === machineId)
      return organization === organizationId && machine !== undefined
        ? Effect.succeed({ ...machine, organization_id: organization })
        : Effect.fail(new ResourceNotFound({ detail: "Machine not found" }))
    }
    const context = yield* Layer.build(
      AgentsLive.pipe(
        Layer.provideMerge(
          Layer.mergeAll(GroupCommit.layer, IdempotencyKeysRepo.layer, DomainEvents.layer, EventRecorders.none)
        ),
        // Recovery asks which host a turn's machine is on: the engine's reads (no machine rows here).
        Layer.provideMerge(
          Layer.mergeAll(
            EngineReads.layer.pipe(Layer.provide(Layer.mergeAll(MachinesRepo.layer, OperationsRepo.layer))),
            HostLease.layer.pipe(Layer.provide(HostsRepo.layer))
          )
        ),
        Layer.provideMerge(Database.layerFile(database)),
        Layer.provideMerge(Layer.succeed(MachineDriver, driver)),
        Layer.provide(Layer.succeed(Machines, { find } as unknown as Context.Tag.Service<Machines>)),
        Layer.provide(Layer.succeed(AppConfig, testConfig(dir, 0, { runtime: "process", agentsDir })))
      )
    )
    return { context, agents: yield* Effect.provide(Agents, context) }
  })

/** The error code an effect failed with (its tag), or fails the test when it succeeded. */
export const failureOf = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) return assert.fail(`expected a failure, got ${JSON.stringify(exit.value)}`)
    if (exit.cause._tag !== "Fail") return assert.fail(`expected a failure, got ${String(exit.cause)}`)
    return exit.cause.error._tag
  })

/** Waits (in real time: the agent is a real process) until no turn of the conversation runs. */
export const idle = (agents: Context.Tag.Service<Agents>, conversationId: string) =>
  eventually(Effect.map(
    agents.readAfter(conversationId, 0),
    (read) => read.active ? undefined : read.events
  ))

/** Writes into the agents' tables of the database in `dir`, as an earlier svc process left them. */
export const withTables = <A, E>(
  dir: string,
  write: (repo: Context.Tag.Service<AgentConversationsRepo>) => Effect.Effect<A, E>
) =>
  Effect.scoped(Effect.flatMap(
    Layer.build(AgentConversationsRepo.layer.pipe(Layer.provide(Database.layerFile(NodePath.join(dir, "svc.db"))))),
    (context) => write(Context.get(context, AgentConversationsRepo))
  ))
