/**
 * Operations as the API shows them: one operation of the organization, a machine's operations page
 * by page, cancelling, and the persisted event history with its live wake-ups.
 */
import { Context, Effect, Layer, Option } from "effect"
import { DomainEvents } from "../kernel/events/DomainEvents.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { paginate } from "../kernel/http/Pagination.js"
import { HostCapacity } from "../runtime/HostCapacity.js"
import { MachinesRepo } from "../runtime/MachinesRepo.js"
import { MachineSupervisor } from "../runtime/MachineSupervisor.js"
import { OperationsRepo } from "../runtime/OperationsRepo.js"

const make = Effect.gen(function*() {
  const operations = yield* OperationsRepo
  const machines = yield* MachinesRepo
  const supervisor = yield* MachineSupervisor
  const bus = yield* DomainEvents
  const capacity = yield* HostCapacity

  const find = (organizationId: string, id: string) =>
    Effect.flatMap(
      operations.findIn(organizationId, id),
      Option.match({
        onNone: () => Effect.fail(new ResourceNotFound({ detail: "Operation not found" })),
        onSome: Effect.succeed
      })
    )

  return {
    find,
    /** A waiting boot's place in the start queue (the operation DTO's `starting_soon`). */
    positionOf: capacity.positionOf,
    /** The machine's operations, newest first; the cursor is the last row's acceptance number. */
    pageForMachine: (organizationId: string, machineId: string, limit: number, cursor: string | null) =>
      Effect.gen(function*() {
        if (Option.isNone(yield* machines.findIn(organizationId, machineId))) {
          return yield* new ResourceNotFound({ detail: "Machine not found" })
        }
        const before = cursor === null ? null : Number(cursor)
        return yield* paginate(
          limit,
          (limit) => operations.pageForMachine(machineId, { limit, before: Number.isFinite(before) ? before : null }),
          (row) => String(row.seq)
        )
      }),
    /** Cancels the operation (a no-op once it ended) and answers it as it is now. */
    cancel: (organizationId: string, id: string) =>
      Effect.gen(function*() {
        const operation = yield* find(organizationId, id)
        yield* supervisor.cancel(operation)
        return Option.getOrElse(yield* operations.find(operation.id), () => operation)
      }),
    eventsAfter: operations.eventsAfter,
    /** Calls back at news of the operation; readers then read the persisted events again. */
    listen: bus.listenOperation
  }
})

export class Operations extends Context.Tag("svc/operations/Operations")<
  Operations,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(Operations, make)
}
