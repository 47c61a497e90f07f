#!/usr/bin/env node
// Entry of the svc binary. In a checkout TypeScript runs through tsx, so `npm ci` is the only build
// step; an installed package has no sources and runs the bundle it was packed with (dist/cli/svc.mjs).
import * as NodeFs from "node:fs"

const sources = new URL("../src/cli/main.ts", import.meta.url)
if (NodeFs.existsSync(sources)) {
  const { register } = await import("tsx/esm/api")
  register()
  await import(sources.href)
} else {
  await import(new URL("../dist/cli/svc.mjs", import.meta.url).href)
}
