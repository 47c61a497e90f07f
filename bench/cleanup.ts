/** Destroys every machine left in a data dir (benches leave sandboxes running otherwise). */
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { MachineDriver } from "../src/drivers/MachineDriver.js"
import * as SandboxDriver from "../src/drivers/sandbox/SandboxDriver.js"

const dataDir = process.argv[2]!
const folder = NodePath.join(dataDir, "machines")
await Effect.runPromise(
  Effect.gen(function*() {
    const driver = yield* MachineDriver
    const ids = NodeFs.existsSync(folder) ? NodeFs.readdirSync(folder) : []
    yield* Effect.forEach(ids, (id) => Effect.ignore(driver.destroy(id)), { concurrency: 8, discard: true })
  }).pipe(Effect.provide(SandboxDriver.layer({ dataDir })))
)
NodeFs.rmSync(dataDir, { recursive: true, force: true })
