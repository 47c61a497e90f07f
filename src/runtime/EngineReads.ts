/**
 * The engine's read service: the named queries over machines and operations that the other areas
 * ask (the tables are the engine's: docs/architecture.md "Tables and their owners"). The machines
 * and operations areas, which accept and settle, use the repositories themselves.
 */
import { Context, Effect, Layer } from "effect"
import { MachinesRepo } from "./MachinesRepo.js"
import { OperationsRepo } from "./OperationsRepo.js"

export type { MachineRow, RunningBoot } from "./MachinesRepo.js"
export { isTerminal, type OperationRow } from "./OperationsRepo.js"

const make = Effect.gen(function*() {
  const machines = yield* MachinesRepo
  const operations = yield* OperationsRepo
  return {
    machines: {
      find: machines.find,
      findIn: machines.findIn,
      hostOf: machines.hostOf,
      runningByHost: machines.runningByHost,
      countsByState: machines.countsByState,
      countRunning: machines.countRunning,
      countRunningBy: machines.countRunningBy,
      headedForRunning: machines.headedForRunning,
      runningBoots: machines.runningBoots,
      runningByMember: machines.runningByMember,
      namesAndCreators: machines.namesAndCreators
    },
    operations: {
      find: operations.find,
      bootsSince: operations.bootsSince,
      countsByKindAndStatus: operations.countsByKindAndStatus,
      openPerMachine: operations.openPerMachine
    }
  }
})

export class EngineReads extends Context.Tag("svc/runtime/EngineReads")<
  EngineReads,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(EngineReads, make)
}
