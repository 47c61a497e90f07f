import { Command, Options } from "@effect/cli"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { AppLive } from "../App.js"
import * as AppConfig from "../kernel/config/AppConfig.js"
import { StartFailed } from "./StartRefusals.js"

const flag = (name: string, description: string) =>
  Options.text(name).pipe(Options.optional, Options.withDescription(description))

/**
 * Builds the server and keeps it until interrupted, as Layer.launch does; a defect while building
 * (a file that cannot be read, a folder that cannot be made) is a start that cannot succeed, printed
 * as one line by src/cli/main.ts, with the whole cause in the debug log.
 */
const launch = <E>(app: Layer.Layer<never, E>) =>
  Effect.scoped(
    Layer.build(app).pipe(
      Effect.catchAllDefect((defect) =>
        Effect.zipRight(Effect.logDebug("the start failed", defect), Effect.fail(new StartFailed({ defect })))
      ),
      Effect.zipRight(Effect.never)
    )
  )

/** `svc serve`: the first five settings may be given as flags; they win over the environment. */
export const serve = Command.make(
  "serve",
  {
    host: flag("host", "The address to listen on (SVC_HOST, default 127.0.0.1)"),
    port: flag("port", "The port to listen on (SVC_PORT, default 8080)"),
    dataDir: flag("data-dir", "Where the database, disks and snapshots live (SVC_DATA_DIR)"),
    runtime: flag("runtime", "The machine driver: sandbox or process (SVC_RUNTIME; docs/drivers.md)"),
    baseUrl: flag("base-url", "The public address of the API (SVC_BASE_URL)")
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
    return launch(AppLive(AppConfig.layer)).pipe(Effect.withConfigProvider(provider))
  }
).pipe(Command.withDescription("Start the service: API, sign-in pages and workers in one process"))
