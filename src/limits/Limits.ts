/**
 * Count limits per organization tier (api.md LimitsDto): machines running at once and boots per
 * hour, plus a member's own `max_running_machines`. Checked inside the accept transaction of
 * create (with start), start and restart, against projected states, so two concurrent requests
 * cannot both take the last slot. Money rules belong to billing, not here.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig, type Tier } from "../kernel/config/AppConfig.js"
import { Entitlements } from "../kernel/Entitlements.js"
import { OrganizationSuspended } from "../kernel/http/Errors.js"
import { LimitExceeded } from "../kernel/http/MachineErrors.js"
import { OrganizationStanding } from "../kernel/OrganizationStanding.js"
import { Organizations } from "../organizations/Organizations.js"
import type { MachineRow } from "../runtime/MachinesRepo.js"
import { MachinesRepo } from "../runtime/MachinesRepo.js"
import { OperationsRepo } from "../runtime/OperationsRepo.js"

const hour = 3_600_000

export interface LimitsView {
  readonly tier: Tier
  /** `suspended` wins over the counts: nothing may boot at all. */
  readonly status: "ok" | "at_limit" | "suspended"
  readonly concurrent_machines: { readonly limit: number; readonly used: number }
  readonly starts: ReadonlyArray<{ readonly window: "hour"; readonly limit: number; readonly used: number }>
}

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const entitlements = yield* Entitlements
  const machines = yield* MachinesRepo
  const operations = yield* OperationsRepo
  const organizations = yield* Organizations
  const standing = yield* OrganizationStanding

  const view = (organizationId: string) =>
    Effect.gen(function*() {
      const tier = yield* entitlements.tierOf(organizationId)
      const limits = config.limits[tier]
      const now = yield* Clock.currentTimeMillis
      const running = yield* machines.countRunning(organizationId)
      const starts = yield* operations.bootsSince(organizationId, now - hour)
      const full = running >= limits.concurrent_machines || starts >= limits.starts_per_hour
      const suspended = yield* standing.suspended(organizationId)
      const result: LimitsView = {
        tier,
        status: suspended ? "suspended" : full ? "at_limit" : "ok",
        concurrent_machines: { limit: limits.concurrent_machines, used: running },
        starts: [{ window: "hour", limit: limits.starts_per_hour, used: starts }]
      }
      return result
    })

  return {
    view,
    /**
     * Fails with `limit_exceeded` when booting `machine` (null for a new one) would pass a limit.
     * A machine already projected to run takes no new slot, but its restart is still a boot.
     * A suspended organization boots nothing: asked here again, inside the accept's transaction, a
     * boot that passed the route's check just before a suspension committed is still refused (or,
     * accepted first, is stopped by the suspension).
     */
    checkBoot: (organizationId: string, userId: string, machine: MachineRow | null) =>
      Effect.gen(function*() {
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

export class Limits extends Context.Tag("svc/services/Limits")<Limits, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Limits, make)
}
