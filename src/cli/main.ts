/** The `svc` command. */
import { Command } from "@effect/cli"
import { OpenApi } from "@effect/platform"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Logger, LogLevel } from "effect"
import { Api } from "../Api.js"
import { admin } from "./Admin.js"
import { agents } from "./Agents.js"
import { serve } from "./Serve.js"
import { startRefusal } from "./StartRefusals.js"

const openapi = Command.make("openapi", {}, () => Console.log(JSON.stringify(OpenApi.fromApi(Api), null, 2))).pipe(
  Command.withDescription("Print the OpenAPI document of the API")
)

const svc = Command.make("svc").pipe(Command.withSubcommands([serve, admin, agents, openapi]))

const run = Command.run(svc, { name: "svc", version: "0.1.0" })

const logLevel = LogLevel.fromLiteral(
  (["All", "Trace", "Debug", "Info", "Warning", "Error", "Fatal", "None"] as const).find((level) =>
    level.toLowerCase() === (process.env.SVC_LOG_LEVEL ?? "info").toLowerCase()
  ) ?? "Info"
)

run(process.argv).pipe(
  // A malformed setting, a data dir in use or a port in use stops the start with one line.
  Effect.catchIf((error) => startRefusal(error) !== undefined, (error) =>
    Effect.sync(() => {
      process.stderr.write(startRefusal(error) + "\n")
      process.exit(1)
    })),
  // Logs go to stderr, so commands that print JSON keep stdout clean.
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
  Logger.withMinimumLogLevel(logLevel),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: false })
)
