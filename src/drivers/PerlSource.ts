/**
 * The Perl programs svc runs (`launcher/launcher.pl`, `sandbox/spawner.pl`), as text.
 *
 * bin/build.mjs puts their text into the bundle as `SVC_PERL_SOURCES` (esbuild `define`), so the
 * bundle (and a single executable made from it) needs no source tree. Run from the sources (tsx,
 * vitest) there is no such definition and the file beside this module is read once: one mechanism
 * that needs no loader hook in tsx nor a plugin in vitest.
 */
import * as NodeFs from "node:fs"

/** Defined by bin/build.mjs in the bundle only: each .pl under src/drivers by its relative path. */
declare const SVC_PERL_SOURCES: Readonly<Record<string, string>> | undefined

export type PerlProgram = "launcher/launcher.pl" | "sandbox/spawner.pl"

export const perlSource = (program: PerlProgram): string => {
  const bundled = typeof SVC_PERL_SOURCES === "undefined" ? undefined : SVC_PERL_SOURCES[program]
  return bundled ?? NodeFs.readFileSync(new URL(`./${program}`, import.meta.url), "utf8")
}
