import { Command } from "@effect/cli"
import { Effect, Layer } from "effect"
import { AppLive } from "../App.js"
import * as AppConfig from "../kernel/config/AppConfig.js"
import { settingFlag, settingsWithFlags } from "./SettingFlags.js"
import { StartFailed } from "./StartRefusals.js"

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
    host: settingFlag("host", "The address to listen on (SVC_HOST, default 127.0.0.1)"),
    port: settingFlag("port", "The port to listen on (SVC_PORT, default 8080)"),
    dataDir: settingFlag("data-dir", "Where the database, disks and snapshots live (SVC_DATA_DIR)"),
    runtime: settingFlag("runtime", "The machine driver: sandbox or process (SVC_RUNTIME; docs/drivers.md)"),
    baseUrl: settingFlag("base-url", "The public address of the API (SVC_BASE_URL)")
  },
  (flags) =>
    launch(AppLive(AppConfig.layer)).pipe(Effect.withConfigProvider(settingsWithFlags({
      SVC_HOST: flags.host,
      SVC_PORT: flags.port,
      SVC_DATA_DIR: flags.dataDir,
      SVC_RUNTIME: flags.runtime,
      SVC_BASE_URL: flags.baseUrl
    })))
).pipe(Command.withDescription("Start the service: API, sign-in pages and workers in one process"))
