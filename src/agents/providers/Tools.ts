/**
 * The agents' tools folder: one npm prefix holding the three command-line agents at the versions
 * this build was tested with, and `versions.json` with what each reports as its version. Every
 * machine reads it (the sandbox driver binds it read-only into each machine). `svc agents install
 * [--dir DIR]` fills it; the default is `<data dir>/tools/agents` (`SVC_AGENTS_DIR`).
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { AgentProviderShape } from "./AgentProvider.js"
import { allProviders } from "./Providers.js"
import type { AgentProvider } from "./Schemas.js"

export const versionsFile = (dir: string) => NodePath.join(dir, "versions.json")

export type Versions = Partial<Record<AgentProvider, string>>

export const readVersions = (dir: string): Versions => {
  try {
    return JSON.parse(NodeFs.readFileSync(versionsFile(dir), "utf8")) as Versions
  } catch {
    return {}
  }
}

/** The agent's command is there and executable on this host. */
export const installed = (dir: string, provider: AgentProviderShape) => {
  try {
    NodeFs.accessSync(NodePath.join(dir, provider.bin), NodeFs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The versions that `install` asks npm for (exact, so every host runs what was tested). */
export const packageSpecs = (list: ReadonlyArray<AgentProviderShape> = allProviders()) =>
  list.map((provider) => `${provider.npmPackage}@${provider.npmVersion}`)

/**
 * Installs (or updates) the agents into `dir` with npm and records their versions. Synchronous:
 * it is a command-line step and a test setup step. Answers the versions; throws with npm's output
 * when npm fails.
 */
export const install = (dir: string, log: (line: string) => void = () => undefined): Versions => {
  NodeFs.mkdirSync(dir, { recursive: true })
  const manifest = NodePath.join(dir, "package.json")
  if (!NodeFs.existsSync(manifest)) {
    NodeFs.writeFileSync(manifest, JSON.stringify({ name: "svc-agents", private: true }, null, 2))
  }
  const specs = packageSpecs()
  log(`installing ${specs.join(" ")} into ${dir}`)
  const npm = NodeChild.spawnSync(
    "npm",
    ["install", "--no-audit", "--no-fund", "--no-update-notifier", "--save-exact", ...specs],
    { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }
  )
  if (npm.status !== 0) throw new Error(`npm install failed (${npm.status}): ${npm.stderr || npm.stdout}`)
  const versions: Versions = {}
  for (const provider of allProviders()) {
    const run = NodeChild.spawnSync(NodePath.join(dir, provider.bin), ["--version"], {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, DISABLE_AUTOUPDATER: "1" }
    })
    if (run.status !== 0) throw new Error(`${provider.bin} --version failed: ${run.stderr || String(run.error)}`)
    versions[provider.key] = run.stdout.trim().split("\n").pop()!.trim()
    log(`${provider.key}: ${versions[provider.key]}`)
  }
  NodeFs.writeFileSync(versionsFile(dir), JSON.stringify(versions, null, 2))
  return versions
}

/** Installs unless every agent of this build is there at its version (what the tests call). */
export const ensureInstalled = (dir: string, log?: (line: string) => void): Versions => {
  const versions = readVersions(dir)
  const current = allProviders().every((provider) =>
    installed(dir, provider) && (versions[provider.key] ?? "").includes(provider.npmVersion)
  )
  return current ? versions : install(dir, log)
}
