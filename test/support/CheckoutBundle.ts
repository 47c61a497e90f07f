/**
 * The `svc` command the end-to-end tests run as a separate process: the bundle `npm start` runs
 * (bin/build.mjs), built from this checkout's sources once per state of them. Run from the sources
 * through tsx, each start took 6.5 s of CPU (the loader compiles about 400 modules, and `serve`
 * builds the console again); the bundle takes 1.8 s (docs/benchmarks.md "CLI starts in the tests").
 * `SVC_TEST_CLI=sources` runs bin/svc.mjs instead.
 */
import * as NodeChild from "node:child_process"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"

/** What the bundle is made from: a change to any of these builds it again. */
const inputs = [
  "src",
  "console/src",
  "schema",
  "bin/build.mjs",
  "bin/esbuild-options.mjs",
  "console/build.mjs",
  "package-lock.json"
]

const filesOf = (path: string): Array<string> =>
  NodeFs.statSync(path).isDirectory()
    ? NodeFs.readdirSync(path, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((
      entry
    ) => NodePath.join(entry.parentPath, entry.name)).sort()
    : [path]

const stateOfSources = () => {
  const hash = NodeCrypto.createHash("sha256")
  for (const file of inputs.flatMap(filesOf)) hash.update(file).update("\0").update(NodeFs.readFileSync(file))
  return hash.digest("hex").slice(0, 16)
}

/** Bundles of other source states, a day old: none is in use by a run any more. */
const forgetOldBundles = () => {
  const dayAgo = Date.now() - 86_400_000
  for (const name of NodeFs.readdirSync(".cache").filter((name) => name.startsWith("cli-"))) {
    const path = NodePath.join(".cache", name)
    if (NodeFs.statSync(path).mtimeMs < dayAgo) NodeFs.rmSync(path, { recursive: true, force: true })
  }
}

let built: string | undefined

/**
 * The bundle's path, built on first use in a process: `.cache/cli-<hash>/svc.mjs`, two folders deep as
 * src/cli/main.ts is, so the paths it takes from import.meta.url resolve alike. Test files in
 * parallel may build it at once: each writes its own folder and renames it into place.
 */
export const checkoutBundle = (): string => {
  if (built !== undefined) return built
  const folder = NodePath.resolve(".cache", `cli-${stateOfSources()}`)
  const file = NodePath.join(folder, "svc.mjs")
  if (!NodeFs.existsSync(file)) {
    const building = `${folder}.${process.pid}`
    NodeChild.execFileSync(process.execPath, ["bin/build.mjs", `--outfile=${NodePath.join(building, "svc.mjs")}`], {
      stdio: ["ignore", "ignore", "inherit"]
    })
    try {
      NodeFs.renameSync(building, folder)
    } catch {
      NodeFs.rmSync(building, { recursive: true, force: true }) // another file's build won the race
    }
    forgetOldBundles()
  }
  built = file
  return file
}

/** The script node runs as `svc`: the checkout's bundle, or bin/svc.mjs with SVC_TEST_CLI=sources. */
export const cliScript = (): string =>
  process.env.SVC_TEST_CLI === "sources" ? NodePath.resolve("bin/svc.mjs") : checkoutBundle()
