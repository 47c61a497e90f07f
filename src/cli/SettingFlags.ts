/** Settings given as flags of `svc serve` and `svc doctor` (`--port` for SVC_PORT): a flag wins over its variable. */
import { Options } from "@effect/cli"
import { ConfigProvider, Option } from "effect"

/** An optional text flag that stands for a setting. */
export const settingFlag = (name: string, description: string) =>
  Options.text(name).pipe(Options.optional, Options.withDescription(description))

/** The environment, with the settings given as flags (by variable name) over it. */
export const settingsWithFlags = (flags: Readonly<Record<string, Option.Option<string>>>) =>
  ConfigProvider.fromMap(
    new Map(Object.entries(flags).flatMap(([name, value]) => Option.isSome(value) ? [[name, value.value]] : []))
  ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
