/**
 * The process's one log stream, on stderr (stdout stays for what commands print, such as
 * bootstrap's JSON line): `SVC_LOG_FORMAT` = `pretty` (for people: colours when stderr is a
 * terminal), `json` (one object a line, for collectors) or `logfmt`. Without it: pretty on a
 * terminal, JSON otherwise.
 */
import { Cause, Config, HashMap, Logger, LogLevel } from "effect"
import type { AccessLine } from "../kernel/http/RequestEdge.js"

export const logFormats = ["pretty", "json", "logfmt"] as const
export type LogFormat = typeof logFormats[number]

/** The format asked for, else the one that suits where stderr goes. */
export const logFormat = Config.literal(...logFormats)("SVC_LOG_FORMAT").pipe(
  Config.withDefault<LogFormat>(process.stderr.isTTY ? "pretty" : "json")
)

/**
 * Log lines are written to stderr together, at most `flushEveryMs` after the first of them: the
 * server pays one write for many lines rather than one each (stderr is a pipe or journald's socket,
 * written synchronously, and each write wakes its reader). Once per event-loop turn still wrote
 * each of an exec's access lines alone. The lines held are written at exit; a kill -9 loses at
 * most those of the last `flushEveryMs`.
 */
const flushEveryMs = 50

let pending = ""

export const flushLogs = () => {
  if (pending === "") return
  const lines = pending
  pending = ""
  process.stderr.write(lines)
}

process.on("exit", flushLogs)

const writeLine = (line: string) => {
  if (pending === "") setTimeout(flushLogs, flushEveryMs).unref()
  pending += line + "\n"
  // A burst is not held back beyond 64 KiB.
  if (pending.length > 65_536) flushLogs()
}

const paint = (colors: boolean, code: string, text: string) => (colors ? `\x1b[${code}m${text}\x1b[0m` : text)

const levelColor = (level: LogLevel.LogLevel) =>
  LogLevel.greaterThanEqual(level, LogLevel.Error)
    ? "31"
    : level._tag === "Warning"
    ? "33"
    : level._tag === "Info"
    ? "32"
    : "90"

const show = (value: unknown) => {
  const text = typeof value === "string" ? value : JSON.stringify(value)
  return /^[^\s"=]+$/.test(text) ? text : JSON.stringify(text)
}

/** A pretty line: time, level, text, then `key=value` fields. */
const prettyLine = (
  colors: boolean,
  date: Date,
  level: LogLevel.LogLevel,
  text: string,
  fields: ReadonlyArray<readonly [string, unknown]>
) =>
  [
    paint(colors, "90", date.toISOString().slice(11, 23)),
    paint(colors, levelColor(level), level.label.padEnd(5)),
    text,
    ...fields.map(([key, value]) => paint(colors, "90", `${key}=${show(value)}`))
  ].join(" ")

/**
 * For people: one line an entry, `11:02:27.700 INFO  GET /v1/me 401 6.9ms  correlation_id=...`, the
 * access line's fields already in its message; a failure's cause follows, indented.
 */
export const prettyLogger = (colors: boolean) =>
  Logger.make<unknown, void>(({ annotations, cause, date, logLevel, message }) => {
    const text = (Array.isArray(message) ? message : [message]).map((part) =>
      typeof part === "string" ? part : show(part)
    )
    const isAccess = HashMap.has(annotations, "access")
    const fields = [...annotations].filter(([key]) => !isAccess || key === "correlation_id")
    const failure = Cause.isEmpty(cause) ? "" : "\n  " + Cause.pretty(cause).split("\n").join("\n  ")
    writeLine(prettyLine(colors, date, logLevel, text.join(" "), fields) + failure)
  })

/** The access line's fields as the structured formats show them (as Effect's loggers would). */
const accessFields = (line: AccessLine) => ({
  correlation_id: line.correlation_id,
  access: true,
  status: line.status,
  method: line.method,
  route: line.route,
  duration_ms: line.duration_ms
})

/**
 * Access lines written straight into the stream (src/kernel/http/RequestEdge.ts AccessLog), in the
 * same shape as the format's other lines.
 */
export const accessLogFor = (format: LogFormat): (line: AccessLine) => void => {
  switch (format) {
    case "pretty": {
      const colors = process.stderr.isTTY === true
      return (line) =>
        writeLine(
          prettyLine(colors, new Date(), LogLevel.Info, line.message, [["correlation_id", line.correlation_id]])
        )
    }
    case "json":
      return (line) =>
        writeLine(JSON.stringify({
          message: line.message,
          logLevel: "INFO",
          timestamp: new Date().toISOString(),
          annotations: accessFields(line),
          spans: {},
          fiberId: line.fiber
        }))
    case "logfmt":
      return (line) =>
        writeLine(
          [
            `timestamp=${new Date().toISOString()} level=INFO fiber=${line.fiber} message=${show(line.message)}`,
            ...Object.entries(accessFields(line)).map(([key, value]) => `${key}=${show(value)}`)
          ].join(" ")
        )
  }
}

export const loggerFor = (format: LogFormat): Logger.Logger<unknown, void> => {
  switch (format) {
    case "pretty":
      return prettyLogger(process.stderr.isTTY === true)
    case "json":
      return Logger.map(Logger.jsonLogger, writeLine)
    case "logfmt":
      return Logger.map(Logger.logfmtLogger, writeLine)
  }
}
