/**
 * Admission of a boot: a slot of the host (src/runtime/HostCapacity.ts) before an operation that may
 * boot its machine runs, and what a boot that waited too long in the start queue ends as.
 */
import { Clock, Deferred, Effect, Option } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { Entitlements } from "../kernel/Entitlements.js"
import { specOf } from "./Apply.js"
import { HostCapacity } from "./HostCapacity.js"
import { MachinesRepo } from "./MachinesRepo.js"
import { type OperationRow, OperationsRepo } from "./OperationsRepo.js"
import { type DecodedRequest } from "./Requests.js"
import { type Settling } from "./Settle.js"
import { fillSourceOf, SnapshotWork } from "./SnapshotWork.js"

/**
 * Whether the operation may boot the machine when its turn comes, so must first hold a slot of the
 * host. Decided from what it asks, not from the row's `boots` (whether accepting it cost a start):
 * a start accepted while the machine was to be running anyway still boots it if the machine stopped
 * on its own meanwhile (a crash, an earlier boot that failed `no_capacity` or was cancelled). A
 * machine that still runs holds its slot already, so `tryAdmit` lets its start through at once.
 */
export const needsSlot = (decoded: DecodedRequest) =>
  decoded.kind === "start" || decoded.kind === "restart" ||
  ((decoded.kind === "create" || decoded.kind === "fork" || decoded.kind === "restore") && decoded.request.start)

export const makeAdmission = (settling: Settling) =>
  Effect.gen(function*() {
    const capacity = yield* HostCapacity
    const entitlements = yield* Entitlements
    const machines = yield* MachinesRepo
    const operations = yield* OperationsRepo
    const driver = yield* MachineDriver
    const snapshotWork = yield* SnapshotWork

    /**
     * A slot of the host for a boot: at once when one is free, else after waiting in the start
     * queue, whose place (`queued_at`, priority, expiry) is kept in the row.
     */
    const admit = (operation: OperationRow, cancelled: Deferred.Deferred<void>) =>
      Effect.gen(function*() {
        if (operation.queued_at === null && (yield* capacity.tryAdmit(operation.machine_id))) {
          return "admitted" as const
        }
        const now = yield* Clock.currentTimeMillis
        const boot = {
          operationId: operation.id,
          machineId: operation.machine_id,
          priority: operation.queue_priority ??
            ((yield* entitlements.tierOf(operation.organization_id)) === "trial" ? "trial" as const : "paid" as const),
          queuedAt: operation.queued_at ?? now,
          expiresAt: operation.queue_expires_at ?? now + capacity.queueSeconds * 1000,
          seq: operation.seq ?? 0
        }
        // Recorded once the boot holds its place, so a reader who sees it queued also finds its place.
        const recorded = operation.queued_at !== null ?
          Effect.void :
          settling.persist(() =>
            operations.update(operation.id, {
              queued_at: boot.queuedAt,
              queue_priority: boot.priority,
              queue_expires_at: boot.expiresAt
            })
          )
        return yield* Effect.raceFirst(
          capacity.wait(boot, recorded),
          Effect.as(Deferred.await(cancelled), "cancelled" as const)
        )
      })

    /**
     * A boot that waited too long fails `no_capacity`. A machine created with `start` still gets its
     * disk and is left stopped, as if created without it, so a later start finds it whole.
     */
    const noCapacity = (operation: OperationRow, decoded: DecodedRequest) =>
      Effect.gen(function*() {
        const outcome = { status: "failed", errorCode: "no_capacity" } as const
        const machine = yield* machines.find(operation.machine_id)
        if (!(decoded.kind === "create" || decoded.kind === "fork" || decoded.kind === "restore")) return outcome
        if (Option.isNone(machine)) return outcome
        const source = fillSourceOf(decoded.kind, decoded.request)
        const filled = source !== undefined
          ? yield* Effect.either(snapshotWork.fill(source, machine.value, () => Effect.void))
          : undefined
        if (filled !== undefined && (filled._tag === "Left" || Option.isSome(filled.right))) {
          return { ...outcome, machine: { state: "failed" } as const }
        }
        const created = yield* Effect.either(driver.create(specOf(machine.value, {})))
        return { ...outcome, machine: { state: created._tag === "Right" ? "stopped" : "failed" } as const }
      })

    return { admit, noCapacity, release: capacity.release, pump: capacity.pump }
  })

export type Admission = Effect.Effect.Success<ReturnType<typeof makeAdmission>>
