/** A configuration error as the one line the start prints: `svc: invalid configuration: SVC_X: why`. */
import { ConfigError } from "effect"

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
