/**
 * The port the runtime and the count limits ask "which tier is this organization on?". Billing
 * fills it; until then the configuration decides: `unlimited` billing puts everyone on the
 * unlimited tier, `metered` on the trial tier; no one holds a subscription.
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig, type Tier } from "./config/AppConfig.js"

export interface EntitlementsShape {
  readonly tierOf: (organizationId: string) => Effect.Effect<Tier>
  /** Whether the organization pays a subscription that must be cancelled first (deleting it, say). */
  readonly subscriptionActive: (organizationId: string) => Effect.Effect<boolean>
}

export class Entitlements extends Context.Tag("svc/kernel/Entitlements")<Entitlements, EntitlementsShape>() {
  static readonly fromConfig = Layer.effect(
    Entitlements,
    Effect.map(AppConfig, (config): EntitlementsShape => {
      const tier: Tier = config.billing === "unlimited" ? "unlimited" : "trial"
      return { tierOf: () => Effect.succeed(tier), subscriptionActive: () => Effect.succeed(false) }
    })
  )
}
