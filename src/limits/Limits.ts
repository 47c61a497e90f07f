/**
 * Count limits per organization tier (api.md LimitsDto): machines running at once and boots per
 * hour, plus a member's own `max_running_machines`. Checked inside the accept transaction of
 * create (with start), start and restart, against projected states, with the organization's row
 * locked on PostgreSQL, so two concurrent requests (on one node or two) cannot both take the last slot. The tier, its limits and the money rules come from the
 * Entitlements port (billing fills it): `checkAccept` asks it before counting.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { PlanTier, Tier } from "../kernel/config/AppConfig.js"
import type { MachineSize } from "../kernel/domain/MachineStates.js"
import { Entitlements } from "../kernel/Entitlements.js"
import { OrganizationSuspended } from "../kernel/http/Errors.js"
import { LimitExceeded } from "../kernel/http/MachineErrors.js"
import { OrganizationStanding } from "../kernel/OrganizationStanding.js"
import { makeRowLocks } from "../kernel/sql/RowLocks.js"
import { Organizations } from "../organizations/Organizations.js"
import { EngineReads, type MachineRow } from "../runtime/EngineReads.js"

const hour = 3_600_000

export interface LimitsView {
  /** `unlimited`, `trial`, the plan's name, or `paid` (credit without a plan). */
  readonly tier: Tier | PlanTier
  /**
   * The organization's: `exhausted` once its balance is used up (docs/billing.md), `suspended` while
   * an operator has suspended it (nothing may boot; suspension wins).
   */
  readonly status: "active" | "exhausted" | "suspended"
  readonly concurrent_machines: { readonly limit: number; readonly used: number }
  readonly starts: ReadonlyArray<{ readonly window: "hour"; readonly limit: number; readonly used: number }>
}

const make = Effect.gen(function*() {
  const entitlements = yield* Entitlements
  const { machines, operations } = yield* EngineReads
  const organizations = yield* Organizations
  const standing = yield* OrganizationStanding
  const locks = yield* makeRowLocks

  const view = (organizationId: string) =>
    Effect.gen(function*() {
      const entitled = yield* entitlements.standing(organizationId)
      const limits = entitled.limits
      const now = yield* Clock.currentTimeMillis
      const running = yield* machines.countRunning(organizationId)
      const starts = yield* operations.bootsSince(organizationId, now - hour)
      const suspended = yield* standing.suspended(organizationId)
      const result: LimitsView = {
        tier: entitled.plan ?? entitled.tier,
        status: suspended ? "suspended" : entitled.status,
        concurrent_machines: { limit: limits.concurrent_machines, used: running },
        starts: [{ window: "hour", limit: limits.starts_per_hour, used: starts }]
      }
      return result
    })

  return {
    view,
    /**
     * Fails when accepting a new machine (`machine` null) or booting `machine` is not allowed: first
     * the money rules (402s of the Entitlements port), then, for a boot, `organization_suspended`
     * and `limit_exceeded` when it would pass a count limit. A machine already projected to run
     * takes no new slot, but its restart is still a boot. The suspension is asked here again,
     * inside the accept's transaction: a boot that passed the route's check just before a
     * suspension committed is still refused (or, accepted first, is stopped by the suspension).
     */
    checkAccept: (
      organizationId: string,
      userId: string,
      machine: MachineRow | null,
      change: { readonly size: MachineSize; readonly boots: boolean }
    ) =>
      Effect.gen(function*() {
        // Accepts racing on other nodes count one after another (src/kernel/sql/RowLocks.ts).
        yield* locks.row("organizations", organizationId)
        const headed = change.boots ? yield* machines.headedForRunning(organizationId) : []
        yield* entitlements.admit(organizationId, {
          size: change.size,
          boots: change.boots,
          runningSizes: headed.filter((row) => row.id !== machine?.id).map((row) => row.size)
        })
        if (!change.boots) return
        const current = yield* view(organizationId)
        if (current.status === "suspended") {
          return yield* new OrganizationSuspended({ detail: "The organization is suspended: nothing may boot" })
        }
        const [starts] = current.starts
        if (starts !== undefined && starts.used >= starts.limit) {
          return yield* new LimitExceeded({
            detail:
              `The organization may boot ${starts.limit} machines per hour (${current.tier} tier); try again later`
          })
        }
        if (machine?.projected_state === "running") return
        if (current.concurrent_machines.used >= current.concurrent_machines.limit) {
          return yield* new LimitExceeded({
            detail:
              `The organization may run ${current.concurrent_machines.limit} machines at once (${current.tier} tier); stop one first`
          })
        }
        const member = yield* organizations.membership(organizationId, userId)
        const cap = Option.getOrUndefined(member)?.max_running_machines ?? null
        if (cap !== null && (yield* machines.countRunningBy(organizationId, userId)) >= cap) {
          return yield* new LimitExceeded({ detail: `Your membership may run ${cap} machines at once` })
        }
      })
  }
})

export class Limits extends Context.Tag("svc/limits/Limits")<Limits, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Limits, make)
}
