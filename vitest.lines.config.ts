/**
 * What CI runs again on the newest maintained Node line (.ci/run, docs/development.md "Node lines"):
 * every unit and repository test but the sandbox driver's contract, and the end-to-end files that
 * exercise what differs between Node lines: the binary's start and signals, SQLite's native addon
 * under crashes, child processes and their streams, WebSockets, outbound fetch (undici) and TLS.
 * The page tests (Chromium) and the other end-to-end files run on npm's Node only: they drive the
 * same Node APIs through the HTTP API, and running them twice would double CI's longest part.
 */
import * as NodeFs from "node:fs"
import { configDefaults, defineConfig } from "vitest/config"
import base from "./vitest.config.js"

/** Folders of test/ that run on npm's Node only (the console's are page tests in Chromium too). */
const npmNodeOnly = ["e2e", "pages", "console", "support"]

export const endToEndOnEveryLine = [
  // (`cli`, the CLI's commands against a served svc, stays on npm's Node: `svc serve` and
  // `svc admin bootstrap` as separate processes are durability's and startFailures' first steps.)
  "startFailures", // starts that cannot succeed, SIGTERM while starting and while serving
  "durability", // `svc serve` and `svc admin bootstrap`, SQLite commits across a killed process
  "machines", // machines as child processes, their output and exit
  "terminals", // terminal WebSockets
  "webhooks", // outbound deliveries through fetch
  "oidc" // openid-client's fetch against a real issuer
]

/** Unit files that run on npm's Node only. */
const notOnEveryLine = ["test/drivers/sandbox.test.ts"]

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      ...NodeFs.readdirSync("test").filter((folder) => !npmNodeOnly.includes(folder)).map((folder) =>
        `test/${folder}/**/*.test.ts`
      ),
      ...endToEndOnEveryLine.map((name) => `test/e2e/${name}.test.ts`)
    ],
    // The sandbox driver's contract (bwrap, the Perl spawner, nsenter: the same programs on every
    // line; 78 tests, the pass's longest file): Node's part in it, spawning children and reading
    // their streams, is drivers/process's and e2e/machines' (a sandboxed machine end to end) here.
    exclude: [...configDefaults.exclude, ...notOnEveryLine]
  }
})
