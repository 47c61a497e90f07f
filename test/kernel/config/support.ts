/** The configuration as `svc serve` reads it from these variables (and nothing else). */
import { ConfigProvider, Effect, Layer } from "effect"
import { AppConfig, layer as AppConfigFromEnv } from "../../../src/kernel/config/AppConfig.js"

/** The settings read from `env`, or the ConfigError that names what is wrong, as an Either. */
export const read = (env: Record<string, string>) =>
  AppConfig.pipe(
    Effect.provide(AppConfigFromEnv.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromJson(env))))),
    Effect.either
  )

/** What a start with `env` says: the error's text, or "accepted". */
export const failureOf = (env: Record<string, string>) =>
  Effect.map(read(env), (result) => (result._tag === "Left" ? String(result.left) : "accepted"))
