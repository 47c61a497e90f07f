/**
 * Why `svc serve` could not start, as the one line it prints: a malformed setting
 * (`svc: invalid configuration: SVC_X: why`), a data dir held by another process or unusable, a
 * database that cannot be opened, a port in use, and any other defect while the server was being
 * built (`svc: cannot start: why`; the whole cause at SVC_LOG_LEVEL=debug).
 */
import { HttpServerError } from "@effect/platform"
import { ConfigError, Data } from "effect"
import { DatabaseUnusable } from "../kernel/sql/Database.js"
import { DataDirInUse, DataDirUnusable } from "../kernel/sql/DataDirLock.js"

/** A defect while the server's layers were built (src/cli/Serve.ts): the start cannot succeed. */
export class StartFailed extends Data.TaggedError("StartFailed")<{ readonly defect: unknown }> {}

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split("\n")[0]!

interface Leaf {
  readonly path: ReadonlyArray<string>
  readonly message: string
  readonly missing: boolean
}

const leaves = (error: ConfigError.ConfigError): ReadonlyArray<Leaf> => {
  switch (error._op) {
    case "And":
    case "Or":
      return [...leaves(error.left), ...leaves(error.right)]
    case "MissingData":
      return [{ path: error.path, message: error.message, missing: true }]
    case "InvalidData":
    case "SourceUnavailable":
    case "Unsupported":
      return [{ path: error.path, message: error.message, missing: false }]
  }
}

/**
 * Settings are read from the flags first and then from the environment, so one bad value shows up
 * as "missing from the flags" or "invalid in the environment": the invalid one is what to report.
 */
export const describeConfigError = (error: ConfigError.ConfigError) => {
  const all = leaves(error)
  const leaf = all.find((candidate) => !candidate.missing) ?? all[0]!
  const name = leaf.path.join("_")
  const text = leaf.message.replace(/^[A-Z_]+: /, "")
  return `svc: invalid configuration: ${name}: ${text}`
}

/** A start that cannot go on for a reason the operator fixes: the one line to print, if it is one. */
export const startRefusal = (error: unknown): string | undefined => {
  if (ConfigError.isConfigError(error)) return describeConfigError(error)
  if (error instanceof DataDirInUse || error instanceof DataDirUnusable || error instanceof DatabaseUnusable) {
    return error.message
  }
  if (error instanceof StartFailed) return startRefusal(error.defect) ?? `svc: cannot start: ${firstLine(error.defect)}`
  if (error instanceof HttpServerError.ServeError) {
    const cause = error.cause as { code?: string; address?: string; port?: number } | undefined
    if (cause?.code === "EADDRINUSE") {
      return `svc: ${cause.address ?? "the address"}:${cause.port ?? "?"} is already in use; ` +
        `stop what listens there or choose another with --port or SVC_PORT`
    }
    if (cause?.code === "EADDRNOTAVAIL" || cause?.code === "EACCES") {
      return `svc: cannot listen on ${cause.address ?? "the address"}:${cause.port ?? "?"} (${cause.code}); ` +
        `check --host and --port`
    }
  }
  return undefined
}
