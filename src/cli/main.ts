/** The `svc` command. */
import { Command } from "@effect/cli"
import { OpenApi } from "@effect/platform"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Effect, Exit, Logger, LogLevel, Option } from "effect"
import { Api } from "../Api.js"
import { AccessLog } from "../kernel/http/RequestEdge.js"
import { admin } from "./Admin.js"
import { agent } from "./Agent.js"
import { agents } from "./Agents.js"
import { endingOf } from "./Failure.js"
import { files } from "./Files.js"
import { accessLogFor, flushLogs, logFormat, loggerFor } from "./Logging.js"
import { login, logout } from "./Login.js"
import { machines } from "./Machines.js"
import { ops } from "./Operations.js"
import { serve } from "./Serve.js"
import { snapshots } from "./Snapshots.js"
import { startRefusal } from "./StartRefusals.js"
import { templates } from "./Templates.js"
import { terminal } from "./Terminal.js"

const openapi = Command.make("openapi", {}, () => Console.log(JSON.stringify(OpenApi.fromApi(Api), null, 2))).pipe(
  Command.withDescription("Print the OpenAPI document of the API")
)

const svc = Command.make("svc").pipe(
  Command.withSubcommands([
    serve,
    admin,
    agents,
    openapi,
    machines,
    ops,
    files,
    agent,
    snapshots,
    templates,
    login,
    logout,
    terminal
  ])
)

// `svc --version` (and the help's first line): svc's version and the Node it runs on, which for the
// single file is the one it embeds (bin/build.mjs).
const run = Command.run(svc, { name: "svc", version: `0.1.0 (node ${process.version})` })

const logLevel = LogLevel.fromLiteral(
  (["All", "Trace", "Debug", "Info", "Warning", "Error", "Fatal", "None"] as const).find((level) =>
    level.toLowerCase() === (process.env.SVC_LOG_LEVEL ?? "info").toLowerCase()
  ) ?? "Info"
)

/**
 * A remote command's failure (an API error, a usage error: src/cli/Failure.ts) ends the process
 * with its lines on stderr and its exit code, not a log entry.
 */
const endRemote = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchIf(self, (error) => endingOf(error) !== undefined, (error) =>
    Effect.sync(() => {
      const ending = endingOf(error)!
      flushLogs()
      for (const line of ending.lines) process.stderr.write(line + "\n")
      process.exitCode = ending.exitCode
    }))

/** A failure that is a start refusal: it is printed as its one line, not logged. */
const isRefusal = (cause: Cause.Cause<unknown>) =>
  Option.match(Cause.failureOption(cause), { onNone: () => false, onSome: (e) => startRefusal(e) !== undefined })

// `svc machines list | head -1`: a reader that stopped reading ends the command quietly, as it would a shell tool.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})

/**
 * SIGTERM ends svc within a bound: runMain interrupts the program on it and the finalizers stop the
 * server; should one of them hang, the process still exits, before a service manager's SIGKILL
 * (the unit's TimeoutStopSec is 30 s: src/cli/Systemd.ts).
 */
const stopBoundMillis = 20_000
process.once("SIGTERM", () => {
  setTimeout(() => {
    flushLogs()
    process.stderr.write(`svc: still stopping ${stopBoundMillis / 1000} s after SIGTERM; exiting\n`)
    process.exit(1)
  }, stopBoundMillis).unref()
})

Effect.gen(function*() {
  // The one log stream (src/cli/Logging.ts); a malformed SVC_LOG_FORMAT is refused like any setting.
  const format = yield* logFormat
  return yield* run(process.argv).pipe(
    endRemote,
    // Failures other than refusals are reported through the same logger (runMain's own report would
    // use Effect's default logger on stdout, and its pretty logger printed every line a second time).
    Effect.tapErrorCause((cause) =>
      Cause.isInterruptedOnly(cause) || isRefusal(cause) ? Effect.void : Effect.logError(cause)
    ),
    Effect.provide(Logger.replace(Logger.defaultLogger, loggerFor(format))),
    Effect.provideService(AccessLog, { write: accessLogFor(format) })
  )
}).pipe(
  // A malformed setting, a data dir in use or a port in use stops the start with one line.
  Effect.catchIf((error) => startRefusal(error) !== undefined, (error) =>
    Effect.sync(() => {
      flushLogs()
      process.stderr.write(startRefusal(error) + "\n")
      process.exit(1)
    })),
  Logger.withMinimumLogLevel(logLevel),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    disablePrettyLogger: true,
    // A command may have set its exit code (1, 2, a command's own); a failure otherwise is 1.
    teardown: (exit, onExit) =>
      onExit(
        typeof process.exitCode === "number" && process.exitCode !== 0
          ? process.exitCode
          : Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
          ? 1
          : 0
      )
  })
)
