/**
 * Suspending and resuming an organization (docs/operators.md). The suspension row and its audit row
 * are committed first, in one transaction; then the running machines get force stops whose keys
 * name their boots and the terminals are revoked. A crash after the commit leaves a suspended
 * organization whose machines may still run: `converge` (run at every start) stops them with the
 * same keys, so no boot is stopped twice and none is missed.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AccessRevocations } from "../kernel/AccessRevocations.js"
import { AuditLog } from "../kernel/AuditLog.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { OrganizationStanding } from "../kernel/OrganizationStanding.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { Machines } from "../machines/Machines.js"
import { Organizations } from "../organizations/Organizations.js"
import { OperatorRepo, type SuspensionRow } from "./Repo.js"

/** Who acts and why, as every operator route takes it. */
export interface OperatorAction {
  readonly operator: string
  readonly reason: string
}

export interface SuspensionView {
  readonly suspension: SuspensionRow
  readonly alreadySuspended: boolean
  readonly machinesStopping: number
  readonly ticketsRevoked: number
  readonly channelsRevoked: number
}

const make = Effect.gen(function*() {
  const repo = yield* OperatorRepo
  const audit = yield* AuditLog
  const commit = yield* GroupCommit
  const machines = yield* Machines
  const revocations = yield* AccessRevocations
  const organizations = yield* Organizations

  const known = (organizationId: string) =>
    Effect.flatMap(
      organizations.findById(organizationId),
      Option.match({
        onNone: () => Effect.fail(new ResourceNotFound({ detail: "Organization not found" })),
        onSome: () => Effect.void
      })
    )

  /** Stops what still runs and ends the open channels: safe to repeat (the stops' keys name boots). */
  const enforce = (organizationId: string) =>
    Effect.all({
      stopping: machines.stopAll(organizationId, "suspension"),
      revoked: revocations.organization(organizationId)
    })

  return {
    suspend: (organizationId: string, action: OperatorAction) =>
      Effect.gen(function*() {
        yield* known(organizationId)
        const { fresh, row } = yield* commit.transaction(Effect.gen(function*() {
          const found = yield* repo.suspension(organizationId)
          if (Option.isSome(found)) return { row: found.value, fresh: false }
          const row: SuspensionRow = {
            organization_id: organizationId,
            operator: action.operator,
            reason: action.reason,
            suspended_at: yield* Clock.currentTimeMillis
          }
          yield* repo.suspend(row)
          yield* audit.record({
            actor: action.operator,
            actorKind: "operator",
            action: "organization.suspend",
            organizationId,
            reason: action.reason
          })
          return { row, fresh: true }
        }))
        // Also when already suspended: a crash may have left a stop unaccepted (nothing is stopped twice).
        const { revoked, stopping } = yield* enforce(organizationId)
        const view: SuspensionView = {
          suspension: row,
          alreadySuspended: !fresh,
          machinesStopping: stopping,
          ticketsRevoked: revoked.tickets_revoked,
          channelsRevoked: revoked.channels_revoked
        }
        return view
      }),

    /** Lifts the suspension; the machines stay stopped. Answers whether one was lifted. */
    resume: (organizationId: string, action: OperatorAction) =>
      Effect.gen(function*() {
        yield* known(organizationId)
        return yield* commit.transaction(Effect.gen(function*() {
          const resumed = yield* repo.resume(organizationId)
          if (resumed) {
            yield* audit.record({
              actor: action.operator,
              actorKind: "operator",
              action: "organization.resume",
              organizationId,
              reason: action.reason
            })
          }
          return resumed
        }))
      }),

    /** At start: every suspended organization's machines that still run (a crash mid-suspension) are stopped. */
    converge: Effect.flatMap(
      repo.suspendedOrganizations,
      (rows) =>
        Effect.forEach(rows, (row) =>
          Effect.flatMap(enforce(row.organization_id), ({ stopping }) =>
            stopping === 0
              ? Effect.void
              : Effect.logInfo("stopped the machines of a suspended organization", row.organization_id, stopping)), {
          discard: true
        })
    )
  }
})

export class Suspensions extends Context.Tag("svc/operator/Suspensions")<
  Suspensions,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(Suspensions, make)
}

/** The kernel port over the suspensions table: what Authenticate and the count limits ask. */
export const standingLayer = Layer.effect(
  OrganizationStanding,
  Effect.map(OperatorRepo, (repo) => ({
    suspended: (organizationId: string) => Effect.map(repo.suspension(organizationId), Option.isSome)
  }))
)
