// Loaded with --import by bin/node-lines.mjs into every Node process of a run on another Node line:
// a module under a folder of SVC_NODE_LINE_MODULES (node_modules/better-sqlite3, whose addon is
// built for npm's Node) resolves to the same file in the copy built for this line, for require and
// import alike, whether asked by name or by path (vitest imports dependencies by their path).
import * as NodeModule from "node:module"
import { pathToFileURL } from "node:url"

const folders = Object.entries(JSON.parse(process.env.SVC_NODE_LINE_MODULES ?? "{}")).map(([from, to]) => [
  pathToFileURL(from).href + "/",
  pathToFileURL(to).href + "/"
])

NodeModule.registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context)
    const folder = folders.find(([from]) => resolved.url.startsWith(from))
    return folder === undefined ? resolved : { ...resolved, url: folder[1] + resolved.url.slice(folder[0].length) }
  }
})
