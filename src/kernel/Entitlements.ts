/**
 * The port the runtime, the count limits and the machine routes ask about money: which tier an
 * organization is on, what it may run, and whether a machine change may go ahead. Billing fills it
 * (src/billing/Entitlements.ts); `fromConfig` is the stand-in without billing: `unlimited` puts
 * everyone on the unlimited tier, `metered` on the trial tier; nothing is refused for money.
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig, type PlanTier, type Tier, type TierLimits } from "./config/AppConfig.js"
import type { MachineSize } from "./domain/MachineStates.js"
import type { MoneyRefusal } from "./http/BillingErrors.js"

/** Where an organization stands: its tier, the plan that names it, its count limits, its status. */
export interface Standing {
  readonly tier: Tier
  /** The plan's name when a plan is active (LimitsDto `tier` shows it instead of `paid`). */
  readonly plan: PlanTier | null
  readonly limits: TierLimits
  readonly status: "active" | "exhausted"
}

/** A machine change that may cost money: a new machine (`create`, `fork`, `restore`) or a boot. */
export interface Admission {
  readonly size: MachineSize
  /** Whether it boots the machine (create with start, start, restart). */
  readonly boots: boolean
  /** The sizes of the organization's machines headed for running, this one apart. */
  readonly runningSizes: ReadonlyArray<MachineSize>
}

export interface EntitlementsShape {
  readonly tierOf: (organizationId: string) => Effect.Effect<Tier>
  readonly standing: (organizationId: string) => Effect.Effect<Standing>
  /** Whether the organization pays a subscription that must be cancelled first (deleting it, say). */
  readonly subscriptionActive: (organizationId: string) => Effect.Effect<boolean>
  /** Refuses a change the organization's money does not allow; runs inside the accept's transaction. */
  readonly admit: (organizationId: string, admission: Admission) => Effect.Effect<void, MoneyRefusal>
}

export class Entitlements extends Context.Tag("svc/kernel/Entitlements")<Entitlements, EntitlementsShape>() {
  static readonly fromConfig = Layer.effect(
    Entitlements,
    Effect.map(AppConfig, (config): EntitlementsShape => {
      const tier: Tier = config.billing === "unlimited" ? "unlimited" : "trial"
      const standing: Standing = { tier, plan: null, limits: config.limits[tier], status: "active" }
      return {
        tierOf: () => Effect.succeed(tier),
        standing: () => Effect.succeed(standing),
        subscriptionActive: () => Effect.succeed(false),
        admit: () => Effect.void
      }
    })
  )
}
