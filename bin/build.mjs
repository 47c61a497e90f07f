#!/usr/bin/env node
// Bundles the svc command into dist/cli/svc.mjs: one ES module with its dependencies, run by plain
// node (no TypeScript loader), so it starts in a fraction of the time and holds about half the
// memory of bin/svc.mjs. It sits two folders deep, like src/cli/main.ts, so paths taken from
// import.meta.url (schema/migrations) resolve the same way. dist/svc is the launcher `npm start`
// and the benchmarks run: the bundle with the node settings below.
//
// With --library (npm run build, and npm pack through prepack) it first empties dist/, then also
// compiles src/ to dist/ as JavaScript with declarations (tsconfig.build.json): the package's
// exports, `svc` (the client, dist/index.js) and `svc/server`, for plain node.
import { build } from "esbuild"
import * as NodeChild from "node:child_process"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import { createRequire } from "node:module"
import * as NodePath from "node:path"
import { buildConsole } from "../console/build.mjs"
import { esmBundle } from "./esbuild-options.mjs"
import { fetchNode, isLts, pinnedLines, prepare } from "./node-lines.mjs"

const library = process.argv.includes("--library")
// --outfile=PATH: the bundle alone, at PATH (two folders under the checkout, like src/cli/main.ts):
// the end-to-end tests run the CLI from one built per source state (test/support/CheckoutBundle.ts).
// With --single too, dist/cli and dist/svc are left alone (test/e2e/single.test.ts).
const outfile = process.argv.find((arg) => arg.startsWith("--outfile="))?.slice("--outfile=".length)
// The single executables (dist/svc-linux-*, built by --single, not by this) are kept.
if (library && NodeFs.existsSync("dist")) {
  for (const entry of NodeFs.readdirSync("dist")) {
    if (!entry.startsWith("svc-linux-")) NodeFs.rmSync(NodePath.join("dist", entry), { recursive: true, force: true })
  }
}

/**
 * Node's own heap settings, and two malloc arenas. V8 returns what a burst left behind once the
 * process idles (its memory reducer): with 10,000 machines the resident set is about 120 MiB
 * settled, 260 MiB right after creating them (docs/benchmarks.md). The memory-lean flags the
 * launcher used before (`--max-semi-space-size=2 --heap-growing-percent=10`: 136 MiB right after the
 * burst) cost 60 % more CPU per accepted operation and doubled the exec's p99 with frequent full
 * collections; SVC_NODE_FLAGS sets them (or any node flags) for hosts where the peak matters more.
 */
const launcher = `#!/bin/sh
# svc as npm start runs it (written by bin/build.mjs).
export MALLOC_ARENA_MAX="\${MALLOC_ARENA_MAX:-2}"
# SVC_NODE_FLAGS: node flags, e.g. "--max-semi-space-size=2 --heap-growing-percent=10" for a lower peak.
# Through a symlink on PATH too: the bundle is found beside the launcher's real file.
exec node \${SVC_NODE_FLAGS:-} "$(dirname "$(readlink -f "$0")")/cli/svc.mjs" "$@"
`

/** The Perl and shell programs under src/drivers, by path: src/drivers/Embedded.ts reads them from here in the bundle. */
const embedded = Object.fromEntries(
  NodeFs.readdirSync("src/drivers", { recursive: true }).filter((file) => /\.(pl|sh)$/.test(String(file))).map((
    file
  ) => [
    String(file).split(NodePath.sep).join("/"),
    NodeFs.readFileSync(NodePath.join("src/drivers", String(file)), "utf8")
  ])
)

/** The console (console/, served at `{ui_url}/`): src/pages/ConsoleAssets.ts reads it from here in the bundle. */
const consoleFiles = await buildConsole()

await build({
  ...esmBundle,
  entryPoints: ["src/cli/main.ts"],
  outfile: outfile ?? "dist/cli/svc.mjs",
  // esbuild's keepNames wraps every function and class in a __name() call at load, and that showed as
  // 3-4 % of the server's CPU. Nothing reads names at run time: errors are told apart by their
  // `_tag`, schemas and tags carry explicit identifiers (the OpenAPI document is byte for byte the
  // same without it).
  keepNames: false,
  // Native (better-sqlite3) or loaded by path at run time: resolved from node_modules instead.
  external: ["better-sqlite3", "nodemailer"],
  define: { SVC_EMBEDDED: JSON.stringify(embedded), SVC_CONSOLE: JSON.stringify(consoleFiles) },
  logLevel: "warning"
})

if (outfile === undefined) NodeFs.writeFileSync("dist/svc", launcher, { mode: 0o755 })

if (process.argv.includes("--single")) await buildSingle()

if (library) {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
  NodeChild.execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" })
}

/**
 * `--single`: dist/svc-linux-x64, one file that runs on a host without Node or node_modules: Node's
 * single executable application (a node binary with the bundle injected by postject). The binary is
 * the newest LTS among package.json's nodeLines (bin/node-lines.mjs), whichever Node runs this
 * build, so installs get a maintained runtime. A CommonJS main is what every line's executable runs,
 * so the bundle is built again as CommonJS; the
 * migrations and the driver programs are embedded as text, and better-sqlite3's native addon as an
 * asset, written once to a cache folder (named by its hash; src/kernel/sql/NativeAddon.ts) and
 * loaded with process.dlopen.
 */
async function buildSingle() {
  const migrations = Object.fromEntries(
    NodeFs.readdirSync("schema/migrations").filter((file) => file.endsWith(".sql")).map((file) => [
      file,
      NodeFs.readFileSync(NodePath.join("schema/migrations", file), "utf8")
    ])
  )
  const major = pinnedLines().find((line) => isLts(fetchNode(line)))
  if (major === undefined) throw new Error("package.json nodeLines pins no LTS line")
  const line = prepare(major)
  const addonPath = line.addon
  const addonHash = NodeCrypto.createHash("sha256").update(NodeFs.readFileSync(addonPath)).digest("hex").slice(0, 16)
  // better-sqlite3 finds its addon through `bindings`; here that is the asset, loaded from the cache.
  const addonFromAsset = {
    name: "addon-from-asset",
    setup(build) {
      build.onResolve({ filter: /^bindings$/ }, () => ({ path: "bindings", namespace: "svc-addon" }))
      // Optional modules probed in a try: undici's node:sqlite (Node 22), ws's and msgpackr's native helpers. The
      // executable's require would print a warning at every run; the probes get the absence they handle.
      build.onResolve({ filter: /^(node:sqlite|bufferutil|utf-8-validate|msgpackr-extract)$/ }, (args) => ({
        path: args.path,
        namespace: "svc-absent"
      }))
      build.onLoad({ filter: /.*/, namespace: "svc-absent" }, () => ({
        loader: "js",
        contents: "throw Object.assign(new Error('node:sqlite is absent'), { code: 'ERR_UNKNOWN_BUILTIN_MODULE' })"
      }))
      // Written to a cache folder and loaded from there (src/kernel/sql/NativeAddon.ts says which folder).
      build.onLoad({ filter: /.*/, namespace: "svc-addon" }, () => ({
        loader: "js",
        resolveDir: NodePath.resolve("src/kernel/sql"),
        contents: `module.exports = require("./NativeAddon.ts")
          .addonLoader("${addonHash}", (name) => require("node:sea").getRawAsset(name))`
      }))
    }
  }
  NodeFs.mkdirSync("dist/single", { recursive: true })
  await build({
    entryPoints: ["src/cli/single.ts"],
    outfile: "dist/single/svc.cjs",
    bundle: true,
    minify: true,
    keepNames: false,
    platform: "node",
    format: "cjs",
    target: `node${line.major}`,
    plugins: [addonFromAsset],
    // The module's own URL, for the few places that use it (they find nothing beside the executable
    // and fall back to what is embedded).
    banner: { js: "const svcImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
    define: {
      "import.meta.url": "svcImportMetaUrl",
      SVC_EMBEDDED: JSON.stringify(embedded),
      SVC_CONSOLE: JSON.stringify(consoleFiles),
      SVC_MIGRATIONS: JSON.stringify(migrations)
    },
    logLevel: "error"
  })
  const config = {
    main: "dist/single/svc.cjs",
    output: "dist/single/sea.blob",
    disableExperimentalSEAWarning: true,
    useCodeCache: true,
    assets: { "better_sqlite3.node": addonPath }
  }
  NodeFs.writeFileSync("dist/single/sea-config.json", JSON.stringify(config))
  // The blob (with V8's code cache) is made by the Node that will run it.
  NodeChild.execFileSync(line.node, ["--experimental-sea-config", "dist/single/sea-config.json"], {
    stdio: "inherit"
  })
  const target = "dist/svc-linux-x64"
  NodeFs.copyFileSync(line.node, target)
  NodeFs.chmodSync(target, 0o755)
  const postject = createRequire(import.meta.url).resolve("postject/dist/cli.js")
  const injected = NodeChild.spawnSync(process.execPath, [
    postject,
    target,
    "NODE_SEA_BLOB",
    "dist/single/sea.blob",
    "--sentinel-fuse",
    "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"
  ], { stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" })
  // LIEF (inside postject) names the section headers it adds for the node binary's annobin notes
  // (type 0x100) `.note.100`, a name missing from .shstrtab, and says so: harmless, as nothing
  // reads section names at run time (docs/install.md "Build warnings"). Every other line is shown.
  const harmless = /^warning: Can't find string offset for section name '\.note(\.100)?'$/
  for (const text of injected.stderr.split("\n")) {
    if (text !== "" && !harmless.test(text)) process.stderr.write(text + "\n")
  }
  if (injected.status !== 0) throw new Error(`postject failed (exit ${injected.status})`)
  const size = NodeFs.statSync(target).size
  process.stderr.write(`${target}: ${(size / 1024 / 1024).toFixed(1)} MiB, node v${line.version}\n`)
}
