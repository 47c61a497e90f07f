/**
 * Builds the client package `@svc-dev/client` (packages/client; docs/client.md "The package") into
 * OUT (default packages/client): dist/index.js, src/index.ts bundled by esbuild with every
 * dependency inlined (the package depends on nothing), and dist/types, tsc's declarations of the
 * same sources. The declarations name effect's and @effect/platform's types; their .d.ts files are
 * copied to dist/vendor and the declarations point there, so a TypeScript consumer needs no effect.
 * `node bin/build-client.mjs OUT [DECLARATIONS]`: with DECLARATIONS (the library's dist/, which
 * `npm run build` writes), its .d.ts files are taken instead of running tsc again.
 */
import { build } from "esbuild"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import { createRequire } from "node:module"
import * as NodePath from "node:path"
import { esmBundle } from "./esbuild-options.mjs"

const root = NodePath.resolve(import.meta.dirname, "..")
const out = NodePath.resolve(process.argv[2] ?? NodePath.join(root, "packages/client"))
const dist = NodePath.join(out, "dist")
NodeFs.rmSync(dist, { recursive: true, force: true })
NodeFs.mkdirSync(dist, { recursive: true })
// The package's own files, when it is built elsewhere (a test packs it in a temporary folder).
for (const file of ["package.json", "README.md"]) {
  const source = NodePath.join(root, "packages/client", file)
  if (NodePath.resolve(out, file) !== source) NodeFs.copyFileSync(source, NodePath.join(out, file))
}

await build({
  ...esmBundle,
  entryPoints: [NodePath.join(root, "src/index.ts")],
  outfile: NodePath.join(dist, "index.js"),
  logLevel: "error"
})

const given = process.argv[3]
if (given === undefined) {
  const tsconfig = NodePath.join(dist, "tsconfig.client.json")
  NodeFs.writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: NodePath.join(root, "tsconfig.json"),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        rootDir: NodePath.join(root, "src"),
        outDir: NodePath.join(dist, "types"),
        typeRoots: [NodePath.join(root, "node_modules/@types")]
      },
      // Only the client's sources (the inherited `include` would add the tests and bench).
      files: [NodePath.join(root, "src/index.ts")],
      include: []
    })
  )
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
  NodeChild.execFileSync(process.execPath, [tsc, "-p", tsconfig], { stdio: "inherit", cwd: root })
  NodeFs.rmSync(tsconfig)
} else {
  // The library's declarations (`npm run build` wrote them): those src/index.d.ts reaches.
  const from = NodePath.resolve(given)
  const seen = new Set()
  const visit = (file) => {
    if (seen.has(file) || !NodeFs.existsSync(file)) return
    seen.add(file)
    const target = NodePath.join(dist, "types", NodePath.relative(from, file))
    NodeFs.mkdirSync(NodePath.dirname(target), { recursive: true })
    NodeFs.copyFileSync(file, target)
    for (const [, path] of NodeFs.readFileSync(file, "utf8").matchAll(/["'](\.{1,2}\/[^"']+)\.js["']/g)) {
      visit(NodePath.resolve(NodePath.dirname(file), `${path}.d.ts`))
    }
  }
  visit(NodePath.join(from, "index.d.ts"))
}

/** Every .d.ts under `dir`. */
const declarations = (dir) =>
  NodeFs.readdirSync(dir, { recursive: true }).filter((file) => file.endsWith(".d.ts")).map((file) =>
    NodePath.join(dir, file)
  )

const vendored = { "effect": "effect", "@effect/platform": "platform" }
for (const [name, folder] of Object.entries(vendored)) {
  const from = NodePath.join(root, "node_modules", name, "dist/dts")
  for (const file of declarations(from)) {
    const target = NodePath.join(dist, "vendor", folder, NodePath.relative(from, file))
    NodeFs.mkdirSync(NodePath.dirname(target), { recursive: true })
    NodeFs.copyFileSync(file, target)
  }
}

// `from "effect/Schema"` becomes `from "../vendor/effect/Schema.js"`, relative to each file.
const specifier = /(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(["'])(effect|@effect\/platform)(\/[^"']+)?\2/g
for (const file of declarations(dist)) {
  const text = NodeFs.readFileSync(file, "utf8")
  const rewritten = text.replace(specifier, (_, keyword, quote, name, sub) => {
    const target = NodePath.join(dist, "vendor", vendored[name], `${sub === undefined ? "/index" : sub}.js`)
    let path = NodePath.relative(NodePath.dirname(file), target)
    if (!path.startsWith(".")) path = `./${path}`
    return `${keyword}${quote}${path}${quote}`
  })
  if (rewritten !== text) NodeFs.writeFileSync(file, rewritten)
}

const bytes = (dir) =>
  NodeFs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).reduce(
    (sum, entry) => sum + NodeFs.statSync(NodePath.join(entry.parentPath, entry.name)).size,
    0
  )
process.stderr.write(`${dist}: ${(bytes(dist) / 1024 / 1024).toFixed(2)} MiB\n`)
