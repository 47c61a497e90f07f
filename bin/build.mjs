#!/usr/bin/env node
// Bundles the svc command into dist/cli/svc.mjs: one ES module with its dependencies, run by plain
// node (no TypeScript loader), so it starts in a fraction of the time and holds about half the
// memory of bin/svc.mjs. It sits two folders deep, like src/cli/main.ts, so paths taken from
// import.meta.url (schema/migrations) resolve the same way. dist/svc is the launcher `npm start`
// and the benchmarks run: the bundle with the node settings below.
import { build } from "esbuild"
import * as NodeFs from "node:fs"

/**
 * A small young generation (2 MiB semi-spaces instead of 16-32), an old generation that grows by 10 %
 * at a time instead of up to 4 times, and two malloc arenas: the resident set with 10,000 machines
 * is about 140 MiB instead of 250 (docs/benchmarks.md). V8's --optimize-for-size held it at 135
 * but pins the young generation at 1 MiB whatever --max-semi-space-size says, and cost about a fifth
 * more CPU per operation. `SVC_NODE_FLAGS=` (empty) trades memory for speed.
 */
const launcher = `#!/bin/sh
# svc as npm start runs it (written by bin/build.mjs).
export MALLOC_ARENA_MAX="\${MALLOC_ARENA_MAX:-2}"
# SVC_NODE_FLAGS replaces the memory-lean defaults (set it empty for node's own, faster settings).
exec node \${SVC_NODE_FLAGS---max-semi-space-size=2 --heap-growing-percent=10} "$(dirname "$0")/cli/svc.mjs" "$@"
`

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
  logLevel: "warning"
})

NodeFs.writeFileSync("dist/svc", launcher, { mode: 0o755 })
