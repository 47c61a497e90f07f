/** A configuration error as the one line the start prints: `svc: invalid configuration: SVC_X: why`. */
import { ConfigError } from "effect"

const firstLeaf = (error: ConfigError.ConfigError): { path: ReadonlyArray<string>; message: string } => {
  switch (error._op) {
    case "And":
    case "Or":
      return firstLeaf(error.left)
    case "InvalidData":
    case "MissingData":
    case "SourceUnavailable":
    case "Unsupported":
      return { path: error.path, message: error.message }
  }
}

export const describeConfigError = (error: ConfigError.ConfigError) => {
  const { message, path } = firstLeaf(error)
  const name = path.join("_")
  const text = message.replace(/^[A-Z_]+: /, "")
  return `svc: invalid configuration: ${name}: ${text}`
}
