/**
 * The CLI's stored sign-in: `$XDG_CONFIG_HOME/svc/config.json` (default `~/.config/svc/config.json`)
 * holding `{url, api_key, api_key_id}`, readable by its owner only (mode 0600, folder 0700), since the key is a
 * credential. Written to a temporary file first and renamed, so a crash never leaves half a file.
 */
import { Effect, Schema } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { makeFolders } from "../kernel/Folders.js"

export const StoredConfig = Schema.Struct({
  url: Schema.optional(Schema.String),
  api_key: Schema.optional(Schema.String),
  /** The key's id, so that `svc logout` can revoke it. */
  api_key_id: Schema.optional(Schema.String)
})
export type StoredConfig = typeof StoredConfig.Type

export const configPath = () => {
  const base = process.env.XDG_CONFIG_HOME !== undefined && process.env.XDG_CONFIG_HOME !== ""
    ? process.env.XDG_CONFIG_HOME
    : NodePath.join(NodeOs.homedir(), ".config")
  return NodePath.join(base, "svc", "config.json")
}

/** The stored config; an absent file is an empty one, an unreadable one is reported. */
export const readConfig = Effect.suspend(() => {
  const path = configPath()
  if (!NodeFs.existsSync(path)) return Effect.succeed<StoredConfig>({})
  return Effect.try(() => JSON.parse(NodeFs.readFileSync(path, "utf8"))).pipe(
    Effect.flatMap(Schema.decodeUnknown(StoredConfig)),
    Effect.mapError(() => new BadConfigFile({ path }))
  )
})

export class BadConfigFile extends Schema.TaggedError<BadConfigFile>()("BadConfigFile", { path: Schema.String }) {
  override get message() {
    return `${this.path} is not a svc config file; fix or remove it`
  }
}

/** Replaces the stored config (mode 0600, written atomically). */
export const writeConfig = (config: StoredConfig) =>
  Effect.sync(() => {
    const path = configPath()
    makeFolders(NodePath.dirname(path), 0o700)
    const temporary = `${path}.${process.pid}.tmp`
    NodeFs.writeFileSync(temporary, JSON.stringify(config, null, 2) + "\n", { mode: 0o600 })
    // writeFileSync's mode is masked by the umask and ignored for an existing file: set it outright.
    NodeFs.chmodSync(temporary, 0o600)
    NodeFs.renameSync(temporary, path)
    return path
  })

/** Removes the stored config; answers whether there was one. */
export const removeConfig = Effect.sync(() => {
  const path = configPath()
  const existed = NodeFs.existsSync(path)
  NodeFs.rmSync(path, { force: true })
  return { path, existed }
})
