/**
 * Billing's settings (extensions.md §1 and docs/billing.md): tiers and their count limits, plans and
 * prices (`SVC_LIMITS`, `SVC_PRICES`) and Stripe (`SVC_PAYMENTS`, its keys and price ids). Read by
 * AppConfig, which re-exports them.
 */
import { Config, ConfigError, Effect, Option, type Redacted, Schema } from "effect"
import { bad, ok, type Parsed } from "./Parsing.js"
/** The organization tiers that have their own count limits (api.md LimitsDto `tier`). */
export type Tier = "trial" | "paid" | "unlimited"

export interface TierLimits {
  /** Machines running (or about to run once accepted operations have run) at once. */
  readonly concurrent_machines: number
  /** Boots (create with start, start, restart) accepted in the last hour. */
  readonly starts_per_hour: number
}

/** `SVC_LIMITS` overrides these per tier; docs/configuration.md explains the choice. */
export const defaultLimits: Readonly<Record<Tier, TierLimits>> = {
  trial: { concurrent_machines: 2, starts_per_hour: 30 },
  paid: { concurrent_machines: 50, starts_per_hour: 600 },
  unlimited: { concurrent_machines: 10_000, starts_per_hour: 100_000 }
}

export const planTiers = ["starter", "pro", "team", "scale"] as const
export type PlanTier = typeof planTiers[number]

export interface PlanPrices {
  readonly price_micros: number
  readonly included_micros: number
  /** What a second of running time costs on this plan, as a share of the list price. */
  readonly multiplier: number
  readonly concurrent_machines: number
  readonly starts_per_hour: number
}

/** Every figure of the money rules (docs/billing.md), integer micro-USD; `SVC_PRICES` overrides any. */
export interface Prices {
  readonly hourly_micros: { readonly small: number; readonly default: number; readonly large: number }
  readonly trial: {
    readonly total_micros: number
    readonly days: number
    readonly concurrent_machines: number
    readonly max_hourly_micros: number
  }
  readonly plans: Readonly<Record<PlanTier, PlanPrices>>
  readonly credit_pack_micros: number
}

export const defaultPrices: Prices = {
  hourly_micros: { small: 40_000, default: 160_000, large: 320_000 },
  trial: { total_micros: 5_000_000, days: 14, concurrent_machines: 2, max_hourly_micros: 320_000 },
  plans: {
    starter: {
      price_micros: 20_000_000,
      included_micros: 20_000_000,
      multiplier: 1,
      concurrent_machines: 5,
      starts_per_hour: 60
    },
    pro: {
      price_micros: 100_000_000,
      included_micros: 110_000_000,
      multiplier: 0.9,
      concurrent_machines: 20,
      starts_per_hour: 300
    },
    team: {
      price_micros: 400_000_000,
      included_micros: 460_000_000,
      multiplier: 0.85,
      concurrent_machines: 50,
      starts_per_hour: 1_000
    },
    scale: {
      price_micros: 1_500_000_000,
      included_micros: 1_800_000_000,
      multiplier: 0.8,
      concurrent_machines: 200,
      starts_per_hour: 3_000
    }
  },
  credit_pack_micros: 20_000_000
}

export interface StripeSettings {
  readonly secretKey: Redacted.Redacted<string>
  readonly webhookSecret: Redacted.Redacted<string>
  /** `SVC_STRIPE_API_BASE`: a Stripe-compatible server (tests); absent: Stripe itself. */
  readonly apiBase: string | undefined
  /** `SVC_STRIPE_PRICES`: plan tier to Stripe price id; default `price_<tier>`. */
  readonly prices: Readonly<Record<PlanTier, string>>
  /** `SVC_STRIPE_TIMEOUT_SECONDS`: how long one call to Stripe may take (default 10). */
  readonly timeoutSeconds?: number | undefined
}

const Count = Schema.Int.pipe(Schema.between(0, 1_000_000))
const LimitsOverride = Schema.partialWith(
  Schema.Record({
    key: Schema.Literal("trial", "paid", "unlimited"),
    value: Schema.partialWith(Schema.Struct({ concurrent_machines: Count, starts_per_hour: Count }), { exact: true })
  }),
  { exact: true }
)

export const limitsSetting = Config.string("SVC_LIMITS").pipe(
  Config.option,
  Config.mapOrFail((value): Parsed<Readonly<Record<Tier, TierLimits>>> => {
    if (Option.isNone(value)) return ok(defaultLimits)
    const usage = "expected JSON like {\"trial\": {\"concurrent_machines\": 2, \"starts_per_hour\": 30}}"
    try {
      const decoded = Schema.decodeUnknownEither(LimitsOverride, { onExcessProperty: "error" })(JSON.parse(value.value))
      if (decoded._tag === "Left") return bad("SVC_LIMITS", usage)
      const merged = { ...defaultLimits }
      for (const tier of ["trial", "paid", "unlimited"] as const) {
        merged[tier] = { ...defaultLimits[tier], ...decoded.right[tier] }
      }
      return ok(merged)
    } catch {
      return bad("SVC_LIMITS", usage)
    }
  })
)

const Micros = Schema.Int.pipe(Schema.between(0, 1e15))
const PricesOverride = Schema.partialWith(
  Schema.Struct({
    hourly_micros: Schema.partialWith(Schema.Struct({ small: Micros, default: Micros, large: Micros }), {
      exact: true
    }),
    trial: Schema.partialWith(
      Schema.Struct({
        total_micros: Micros,
        days: Schema.Number.pipe(Schema.between(0, 3650)),
        concurrent_machines: Count,
        max_hourly_micros: Micros
      }),
      { exact: true }
    ),
    plans: Schema.partialWith(
      Schema.Record({
        key: Schema.Literal(...planTiers),
        value: Schema.partialWith(
          Schema.Struct({
            price_micros: Micros,
            included_micros: Micros,
            multiplier: Schema.Number.pipe(Schema.between(0, 10)),
            concurrent_machines: Count,
            starts_per_hour: Count
          }),
          { exact: true }
        )
      }),
      { exact: true }
    ),
    credit_pack_micros: Micros.pipe(Schema.greaterThan(0))
  }),
  { exact: true }
)

/** Partial objects merge over the defaults, one level at a time (plans: per tier). */
export const mergePrices = (given: typeof PricesOverride.Type): Prices => ({
  hourly_micros: { ...defaultPrices.hourly_micros, ...given.hourly_micros },
  trial: { ...defaultPrices.trial, ...given.trial },
  plans: Object.fromEntries(
    planTiers.map((tier) => [tier, { ...defaultPrices.plans[tier], ...given.plans?.[tier] }])
  ) as Record<PlanTier, PlanPrices>,
  credit_pack_micros: given.credit_pack_micros ?? defaultPrices.credit_pack_micros
})

export const pricesSetting = Config.string("SVC_PRICES").pipe(
  Config.option,
  Config.mapOrFail((value): Parsed<Prices> => {
    if (Option.isNone(value)) return ok(defaultPrices)
    const usage = "expected JSON like {\"hourly_micros\": {\"small\": 40000}, \"trial\": {\"total_micros\": 5000000}}"
    try {
      const decoded = Schema.decodeUnknownEither(PricesOverride, { onExcessProperty: "error" })(JSON.parse(value.value))
      return decoded._tag === "Left" ? bad("SVC_PRICES", usage) : ok(mergePrices(decoded.right))
    } catch {
      return bad("SVC_PRICES", usage)
    }
  })
)

/**
 * A secret another setting needs. Its value is never shown, and neither should the absence of one
 * read as `<redacted>` (Config.redacted's words for a missing value): it says what is missing and why.
 */
const neededSecret = (name: string, neededBy: string) =>
  Effect.mapError(
    Config.redacted(name),
    (error) =>
      ConfigError.isMissingDataOnly(error) ? ConfigError.MissingData([name], `missing; ${neededBy} needs it`) : error
  )

export const stripeSetting = Effect.gen(function*() {
  const payments = yield* Config.literal("stripe")("SVC_PAYMENTS").pipe(Config.option)
  if (Option.isNone(payments)) return undefined
  const pricesText = yield* Config.string("SVC_STRIPE_PRICES").pipe(Config.withDefault("{}"))
  let priceIds: Record<string, unknown>
  try {
    priceIds = JSON.parse(pricesText)
  } catch {
    return yield* Effect.fail(ConfigError.InvalidData(["SVC_STRIPE_PRICES"], "not valid JSON"))
  }
  const settings: StripeSettings = {
    secretKey: yield* neededSecret("SVC_STRIPE_SECRET_KEY", "SVC_PAYMENTS=stripe"),
    webhookSecret: yield* neededSecret("SVC_STRIPE_WEBHOOK_SECRET", "SVC_PAYMENTS=stripe"),
    apiBase: Option.getOrUndefined(yield* Config.url("SVC_STRIPE_API_BASE").pipe(Config.option))?.toString(),
    timeoutSeconds: yield* Config.integer("SVC_STRIPE_TIMEOUT_SECONDS").pipe(
      Config.validate({ message: "must be between 1 and 120", validation: (n) => n >= 1 && n <= 120 }),
      Config.withDefault(10)
    ),
    prices: Object.fromEntries(
      planTiers.map((tier) => [tier, typeof priceIds[tier] === "string" ? priceIds[tier] : `price_${tier}`])
    ) as Record<PlanTier, string>
  }
  return settings
})
