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
import * as NodeFs from "node:fs"
import { createRequire } from "node:module"
import * as NodePath from "node:path"

const library = process.argv.includes("--library")
if (library) NodeFs.rmSync("dist", { recursive: true, force: true })

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
exec node \${SVC_NODE_FLAGS:-} "$(dirname "$0")/cli/svc.mjs" "$@"
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

await build({
  entryPoints: ["src/cli/main.ts"],
  outfile: "dist/cli/svc.mjs",
  bundle: true,
  minify: true,
  // esbuild's keepNames wraps every function and class in a __name() call at load, and that showed as
  // 3-4 % of the server's CPU. Nothing reads names at run time: errors are told apart by their
  // `_tag`, schemas and tags carry explicit identifiers (the OpenAPI document is byte for byte the
  // same without it).
  keepNames: false,
  platform: "node",
  format: "esm",
  target: "node20",
  // Native (better-sqlite3) or loaded by path at run time: resolved from node_modules instead.
  external: ["better-sqlite3", "nodemailer"],
  // Bundled CommonJS dependencies call require(); an ES module has none of its own.
  banner: {
    js:
      "import { createRequire as svcCreateRequire } from 'node:module'; const require = svcCreateRequire(import.meta.url);"
  },
  define: { SVC_EMBEDDED: JSON.stringify(embedded) },
  logLevel: "warning"
})

NodeFs.writeFileSync("dist/svc", launcher, { mode: 0o755 })

if (library) {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
  NodeChild.execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" })
}
