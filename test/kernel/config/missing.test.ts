/** A setting another one needs says it is missing, and why: never `<redacted>`. */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { describeConfigError } from "../../../src/cli/StartRefusals.js"
import { AppConfig, layer as AppConfigFromEnv } from "../../../src/kernel/config/AppConfig.js"

const refusal = (env: Record<string, string>) =>
  AppConfig.pipe(
    Effect.provide(AppConfigFromEnv.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromJson(env))))),
    Effect.flip,
    Effect.map(describeConfigError)
  )

describe("missing settings", () => {
  it.effect("SVC_PAYMENTS=stripe without its keys names the missing key", () =>
    Effect.gen(function*() {
      const line = yield* refusal({ SVC_PAYMENTS: "stripe" })
      assert.strictEqual(
        line,
        "svc: invalid configuration: SVC_STRIPE_SECRET_KEY: missing; SVC_PAYMENTS=stripe needs it"
      )
      const second = yield* refusal({ SVC_PAYMENTS: "stripe", SVC_STRIPE_SECRET_KEY: "sk_test_x" })
      assert.include(second, "SVC_STRIPE_WEBHOOK_SECRET: missing")
      assert.notInclude(second, "sk_test_x")
    }))
})
