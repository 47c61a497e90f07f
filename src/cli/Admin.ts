import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Option, Schema } from "effect"
import { IdentityLive } from "../App.js"
import { Accounts } from "../identity/Accounts.js"
import { EmailAddress } from "../identity/Api.js"
import * as AppConfig from "../kernel/config/AppConfig.js"
import { backupCommands } from "./Backup.js"
import { withDataDir } from "./DataDirOption.js"
import { installSystemd } from "./Systemd.js"

/**
 * `svc admin bootstrap`: works with or without a running server (SQLite's busy timeout lets both
 * write), and prints exactly one JSON line on stdout.
 */
const bootstrap = Command.make(
  "bootstrap",
  {
    email: Options.text("email"),
    org: Options.text("org").pipe(Options.optional),
    dataDir: Options.text("data-dir").pipe(Options.optional)
  },
  ({ dataDir, email, org }) => {
    // The same rule as sign-in's; a usage error is one line on stderr and exit code 2 (nothing is opened).
    if (!Schema.is(EmailAddress)(email.trim())) {
      return Effect.sync(() => {
        process.stderr.write(`svc: --email: ${JSON.stringify(email)} is not an email address\n`)
        process.exit(2)
      })
    }
    return Effect.gen(function*() {
      const accounts = yield* Accounts
      const result = yield* accounts.bootstrap(email, Option.getOrUndefined(org))
      yield* Console.log(JSON.stringify(result))
    }).pipe(
      Effect.provide(IdentityLive.pipe(Layer.provide(AppConfig.layer))),
      withDataDir(dataDir)
    )
  }
).pipe(Command.withDescription("Create (or find) a user and their organization and mint a full_access API key"))

export const admin = Command.make("admin").pipe(
  Command.withDescription("Operator commands that act on the data directory"),
  Command.withSubcommands([bootstrap, ...backupCommands, installSystemd])
)
