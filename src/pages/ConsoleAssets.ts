/**
 * The console's build (console/, Preact and xterm.js, bundled by console/build.mjs): its files by
 * name and the entry's script and stylesheet.
 *
 * bin/build.mjs builds it once and puts it into svc's bundle as `SVC_CONSOLE` (esbuild `define`),
 * so the bundle and a single executable carry the console. Run from the sources (tsx, vitest) there
 * is no such definition: console/build.mjs is run once per process, at the first request that
 * needs it, the same mechanism as src/drivers/Embedded.ts. Without either (a library build outside
 * the repository) the console is absent and the pages say so.
 */
import { Effect, Option } from "effect"
import * as NodeFs from "node:fs"
import * as NodeUrl from "node:url"
import * as NodeZlib from "node:zlib"
import type { ConsoleBuild } from "../../console/build.mjs"

/** Defined by bin/build.mjs in the bundle only. */
declare const SVC_CONSOLE: ConsoleBuild | undefined

const builder = new URL("../../console/build.mjs", import.meta.url)

let built: Promise<ConsoleBuild | undefined> | undefined

const load = (): Promise<ConsoleBuild | undefined> => {
  if (typeof SVC_CONSOLE !== "undefined") return Promise.resolve(SVC_CONSOLE)
  if (!NodeFs.existsSync(NodeUrl.fileURLToPath(builder))) return Promise.resolve(undefined)
  return import(builder.href).then((module: { buildConsole: () => Promise<ConsoleBuild> }) => module.buildConsole())
}

/** The console's build, made once; none when this svc was built without it. */
export const consoleBuild: Effect.Effect<Option.Option<ConsoleBuild>> = Effect.map(
  Effect.promise(() => (built ??= load())),
  Option.fromNullable
)

const gzipped = new Map<string, Uint8Array>()

/** A file gzipped, once (the files never change while svc runs). */
export const gzipOf = (name: string, text: string) => {
  let bytes = gzipped.get(name)
  if (bytes === undefined) {
    bytes = NodeZlib.gzipSync(text, { level: 9 })
    gzipped.set(name, bytes)
  }
  return bytes
}
