/** The `svc` binary as users run it, for end-to-end tests that need a separate process. */
import { Effect, Layer } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { MachineDriver } from "../../src/drivers/MachineDriver.js"
import * as ProcessDriver from "../../src/drivers/process/ProcessDriver.js"
import * as SandboxDriver from "../../src/drivers/sandbox/SandboxDriver.js"
import { cliScript } from "./CheckoutBundle.js"
import { client } from "./Http.js"
import { freePort, tempDir } from "./TestServer.js"

/**
 * How to start svc: this checkout's `svc` under the Node running the tests (test/support/CheckoutBundle.ts),
 * or the launcher `npm start` runs (dist/svc, after buildBundle).
 */
export type Entry = readonly [command: string, ...args: Array<string>]
export const checkout = (): Entry => [process.execPath, cliScript()]
export const bundle: Entry = [NodePath.resolve("dist/svc")]

/** Builds the bundle and its launcher (bin/build.mjs), as `npm start` does first. */
export const buildBundle = Effect.sync(() => NodeChild.execFileSync(process.execPath, ["bin/build.mjs"]))

export interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `svc ARGS` to its end. */
export const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}, entry: Entry = checkout()) =>
  Effect.async<Finished>((resume) => {
    const child = NodeChild.execFile(
      entry[0],
      [...entry.slice(1), ...args],
      { env: { ...process.env, ...env } },
      (error) =>
        resume(Effect.succeed({
          code: error === null ? 0 : typeof error.code === "number" ? error.code : 1,
          stdout,
          stderr
        }))
    )
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (chunk) => (stdout += chunk))
    child.stderr!.on("data", (chunk) => (stderr += chunk))
  })

const exited = (child: NodeChild.ChildProcess) => child.exitCode !== null || child.signalCode !== null

/**
 * `svc serve` in the background until the test's scope closes (or the test kills it); resolves
 * once it listens.
 */
export const serve = (
  env: Record<string, string>,
  entry: Entry = checkout(),
  options: { readonly alone?: boolean } = {}
) =>
  Effect.acquireRelease(
    Effect.async<NodeChild.ChildProcess>((resume) => {
      // `alone`: with `env` only, as `env -i` or a service manager starts it.
      const child = NodeChild.spawn(entry[0], [...entry.slice(1), "serve"], {
        env: options.alone === true ? env : { ...process.env, ...env }
      })
      let stderr = ""
      child.stderr.on("data", (chunk) => {
        stderr += chunk
        if (stderr.includes("Listening on")) resume(Effect.succeed(child))
      })
      child.on("exit", (code) => resume(Effect.die(new Error(`svc serve exited ${code}: ${stderr}`))))
    }),
    (child) =>
      Effect.async<void>((resume) => {
        if (exited(child)) return resume(Effect.void)
        child.on("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

/** Kills `child` with SIGKILL and waits until it is gone. */
export const kill = (child: NodeChild.ChildProcess) =>
  Effect.async<void>((resume) => {
    if (exited(child)) return resume(Effect.void)
    child.on("exit", () => resume(Effect.void))
    child.kill("SIGKILL")
  })

/** Destroys every machine left in `dataDir` (machines outlive the server by design; a test's must not). */
export const destroyMachines = (dataDir: string, runtime: "sandbox" | "process") =>
  Effect.gen(function*() {
    const folder = NodePath.join(dataDir, "machines")
    if (!NodeFs.existsSync(folder)) return
    const driver = yield* MachineDriver
    yield* Effect.forEach(NodeFs.readdirSync(folder), (id) => Effect.ignore(driver.destroy(id)), { discard: true })
  }).pipe(
    Effect.provide(
      (runtime === "sandbox" ? SandboxDriver.layer({ dataDir }) : ProcessDriver.layer({ dataDir })) as Layer.Layer<
        MachineDriver
      >
    ),
    Effect.orDie
  )

/**
 * The settings of a served node: a fresh data dir and a free port, the sandbox driver and unlimited
 * billing unless `extra` says otherwise (`SVC_RUNTIME: "process"`), and the data dir's machines
 * destroyed when the test's scope closes (they outlive the server by design).
 */
export const nodeEnv = (extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDir
    const port = yield* freePort
    const env = {
      SVC_DATA_DIR: dataDir,
      SVC_PORT: String(port),
      SVC_RUNTIME: "sandbox",
      SVC_BILLING: "unlimited",
      ...extra
    }
    yield* Effect.addFinalizer(() => destroyMachines(dataDir, env.SVC_RUNTIME === "process" ? "process" : "sandbox"))
    return { dataDir, port, env, url: `http://127.0.0.1:${port}` }
  })

/** `svc serve` on a fresh data dir with the sandbox driver, an owner's key, and its machines destroyed at the end. */
export const servedSandbox = Effect.gen(function*() {
  const { dataDir, env, url } = yield* nodeEnv()
  const first = yield* serve(env)
  const boot = yield* run(["admin", "bootstrap", "--email", "ops@example.com", "--data-dir", dataDir])
  const api = client(url, { key: JSON.parse(boot.stdout).api_key })
  return { api, dataDir, env, first }
})
