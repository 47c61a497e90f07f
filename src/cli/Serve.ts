import { Command, Options } from "@effect/cli"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { AppLive } from "../App.js"
import * as AppConfig from "../kernel/config/AppConfig.js"

const flag = (name: string) => Options.text(name).pipe(Options.optional)

/** `svc serve`: the first five settings may be given as flags; they win over the environment. */
export const serve = Command.make(
  "serve",
  {
    host: flag("host"),
    port: flag("port"),
    dataDir: flag("data-dir"),
    runtime: flag("runtime"),
    baseUrl: flag("base-url")
  },
  (flags) => {
    const overrides = new Map<string, string>()
    const set = (name: string, value: Option.Option<string>) => Option.map(value, (v) => overrides.set(name, v))
    set("SVC_HOST", flags.host)
    set("SVC_PORT", flags.port)
    set("SVC_DATA_DIR", flags.dataDir)
    set("SVC_RUNTIME", flags.runtime)
    set("SVC_BASE_URL", flags.baseUrl)
    const provider = ConfigProvider.fromMap(overrides).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
    return Layer.launch(AppLive(AppConfig.layer)).pipe(Effect.withConfigProvider(provider))
  }
).pipe(Command.withDescription("Start the service: API, sign-in pages and workers in one process"))
