/**
 * Programs svc runs that are not TypeScript (`launcher/launcher.pl`, `sandbox/namespaces.pl`, `sandbox/spawner.pl`,
 * `sandbox/net.sh`, `sandbox/disk.sh`,
 * `guest/*.sh`), as text.
 *
 * bin/build.mjs puts their text into the bundle as `SVC_EMBEDDED` (esbuild `define`), so the
 * bundle (and a single executable made from it) needs no source tree. Run from the sources (tsx,
 * vitest) there is no such definition and the file beside this module is read once: one mechanism
 * that needs no loader hook in tsx nor a plugin in vitest.
 */
import * as NodeFs from "node:fs"

/** Defined by bin/build.mjs in the bundle only: each .pl and .sh under src/drivers by its relative path. */
declare const SVC_EMBEDDED: Readonly<Record<string, string>> | undefined

export type EmbeddedProgram =
  | "launcher/launcher.pl"
  | "sandbox/namespaces.pl"
  | "sandbox/spawner.pl"
  | "sandbox/net.sh"
  | "sandbox/disk.sh"
  | `guest/${string}.sh`

export const embeddedText = (program: EmbeddedProgram): string => {
  const bundled = typeof SVC_EMBEDDED === "undefined" ? undefined : SVC_EMBEDDED[program]
  return bundled ?? NodeFs.readFileSync(new URL(`./${program}`, import.meta.url), "utf8")
}
