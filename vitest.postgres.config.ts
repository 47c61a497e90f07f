/**
 * What CI runs again on PostgreSQL (.ci/run, docs/development.md "PostgreSQL pass"): the unit and
 * repository tests that open svc's database (through test/support/Services.ts or TestServer.ts),
 * each on a database of its own on one PostgreSQL server for the run
 * (test/support/globalPostgres.ts). Tests that never open the database would only run twice, and
 * the end-to-end and page tests stay on SQLite (svc on PostgreSQL end to end: test/e2e/postgres.test.ts).
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { defineConfig } from "vitest/config"
import base from "./vitest.config.js"

/** Folders of test/ that are end-to-end or page tests. */
const notUnit = ["e2e", "pages", "console", "support"]

/** A test file opens the database when it builds svc's services or server. */
const opensDatabase = /support\/(Services|TestServer)\.js|billingServices|from "\.\/support\.js"/

/**
 * Known not to pass on PostgreSQL yet (docs/scale-out.md "What does not work yet"): none now; a
 * file listed here is left out of the PostgreSQL pass.
 */
const notYet: ReadonlyArray<string> = []

const files = (folder: string): Array<string> =>
  NodeFs.readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = NodePath.join(folder, entry.name)
    return entry.isDirectory() ? files(path) : path.endsWith(".test.ts") ? [path] : []
  })

export const onPostgres = NodeFs.readdirSync("test", { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !notUnit.includes(entry.name))
  .flatMap((entry) => files(NodePath.join("test", entry.name)))
  .filter((path) => !notYet.includes(path) && opensDatabase.test(NodeFs.readFileSync(path, "utf8")))
  .sort()

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: onPostgres
  }
})
