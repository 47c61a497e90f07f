/**
 * The esbuild options svc's ES-module bundles share (bin/build.mjs, bin/build-client.mjs,
 * bench/http-floor.ts): one minified file for Node 20 onwards with its dependencies inlined.
 * Bundled CommonJS dependencies call require() (for Node's own modules too), and an ES module has
 * none of its own: the banner makes one.
 */
export const esmBundle = {
  bundle: true,
  minify: true,
  platform: "node",
  format: "esm",
  target: "node20",
  banner: {
    js:
      "import { createRequire as svcCreateRequire } from 'node:module'; const require = svcCreateRequire(import.meta.url);"
  }
}
