import type { BuildOptions } from "esbuild"

/** bin/esbuild-options.mjs, for the TypeScript that builds with it (bench/http-floor.ts). */
export declare const esmBundle: BuildOptions
