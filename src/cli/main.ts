/** The `svc` command. */
import { Command } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Logger, LogLevel, Option } from "effect"
import { AccessLog } from "../kernel/http/RequestEdge.js"
import { svc, version } from "./Commands.js"
import { endingOf } from "./Failure.js"
import { accessLogFor, flushLogs, logFormat, loggerFor } from "./Logging.js"
import { plainConsole, routeBeforeParsing } from "./Routing.js"
import { startRefusal } from "./StartRefusals.js"

const run = Command.run(svc, { name: "svc", version })

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
  // Help, a mistyped command and completion are answered before @effect/cli parses (src/cli/Routing.ts).
  if (yield* routeBeforeParsing(process.argv.slice(2))) return
  return yield* run(process.argv).pipe(
    endRemote,
    plainConsole,
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
