import { ConfigProvider, Effect, Option } from "effect"

/** An admin command's `--data-dir`, winning over SVC_DATA_DIR for the settings the command reads. */
export const withDataDir = (dataDir: Option.Option<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) => {
  const overrides = new Map<string, string>()
  Option.map(dataDir, (dir) => overrides.set("SVC_DATA_DIR", dir))
  return Effect.withConfigProvider(
    effect,
    ConfigProvider.fromMap(overrides).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  )
}
