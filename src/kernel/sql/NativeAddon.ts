/**
 * Where the single executable (bin/build.mjs --single) writes better-sqlite3's native addon, which
 * it carries as an asset, before loading it (dlopen needs a file). In order: systemd's
 * `CacheDirectory=` ($CACHE_DIRECTORY), `<data dir>/cache`, then the user's cache folder; the first
 * folder that holds the file or takes it wins. Under the unit's `ProtectHome=read-only` a home
 * folder cannot be written, so the data dir (a `ReadWritePaths=`) must come before it.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"

let knownDataDir: string | undefined

/** The data dir of this process's configuration (AppConfig), known before any database opens. */
export const useDataDir = (dataDir: string) => {
  knownDataDir = dataDir
}

/** The folders tried, best first, each with the addon's hash as its last part. */
export const cacheFolders = (hash: string, env: NodeJS.ProcessEnv = process.env): ReadonlyArray<string> => {
  const dataDir = knownDataDir ?? env.SVC_DATA_DIR
  const home = NodeOs.homedir()
  return [
    // systemd may list several folders, separated by colons.
    ...(env.CACHE_DIRECTORY ? [NodePath.join(env.CACHE_DIRECTORY.split(":")[0]!, "native")] : []),
    ...(dataDir ? [NodePath.join(NodePath.resolve(dataDir), "cache", "native")] : []),
    NodePath.join(env.XDG_CACHE_HOME || NodePath.join(home || NodeOs.tmpdir(), ".cache"), "svc")
  ].map((dir) => NodePath.join(dir, hash))
}

/** The addon's file in the first folder that has it or takes it (written whole, then renamed). */
export const addonFile = (hash: string, name: string, bytes: () => Uint8Array): string => {
  const failures: Array<string> = []
  for (const dir of cacheFolders(hash)) {
    const file = NodePath.join(dir, name)
    try {
      if (NodeFs.existsSync(file)) return file
      NodeFs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      const partial = `${file}.${process.pid}`
      NodeFs.writeFileSync(partial, bytes(), { mode: 0o500 })
      NodeFs.renameSync(partial, file)
      return file
    } catch (error) {
      failures.push(`${dir}: ${(error as Error).message}`)
    }
  }
  throw new Error(`cannot write the SQLite addon to any cache folder (${failures.join("; ")})`)
}

/** What `require("bindings")` answers inside the single executable: the addon loaded from the cache. */
export const addonLoader = (hash: string, asset: (name: string) => ArrayBuffer) => (name: string): unknown => {
  const module = { exports: {} }
  process.dlopen(module, addonFile(hash, name, () => new Uint8Array(asset(name))))
  return module.exports
}
