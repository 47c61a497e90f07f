// Builds the console (console/src, Preact and xterm.js) into memory with esbuild, the bundler that
// already builds svc itself: ES modules split into chunks (the terminal is one of its own, loaded
// on demand), minified, named by content hash. bin/build.mjs embeds the result in the bundle;
// run from the sources, src/pages/ConsoleAssets.ts calls this once per process.
import { build } from "esbuild"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"

const here = NodePath.dirname(fileURLToPath(import.meta.url))

const contentTypes = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json"
}

/** The console's files by name (under `assets/`), and the names index.html loads. */
export async function buildConsole() {
  const result = await build({
    absWorkingDir: here,
    entryPoints: { console: "src/main.tsx" },
    outdir: "out",
    write: false,
    bundle: true,
    splitting: true,
    format: "esm",
    minify: true,
    target: "chrome110",
    platform: "browser",
    jsx: "automatic",
    jsxImportSource: "preact",
    entryNames: "[name]-[hash]",
    chunkNames: "[name]-[hash]",
    assetNames: "[name]-[hash]",
    metafile: true,
    legalComments: "none",
    logLevel: "warning"
  })
  const files = {}
  for (const file of result.outputFiles) {
    const name = NodePath.basename(file.path)
    files[name] = { contentType: contentTypes[NodePath.extname(name)] ?? "application/octet-stream", text: file.text }
  }
  const entry = Object.entries(result.metafile.outputs).find(([, output]) => output.entryPoint === "src/main.tsx")
  if (entry === undefined) throw new Error("the console build made no entry")
  const script = NodePath.basename(entry[0])
  const style = entry[1].cssBundle === undefined ? undefined : NodePath.basename(entry[1].cssBundle)
  return { files, script, style }
}
