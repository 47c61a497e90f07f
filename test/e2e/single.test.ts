/**
 * The single executable (`npm run build:single`): copied alone into an empty folder and run with an
 * empty environment (no PATH, no node, no node_modules beside it) on a fresh data dir, it
 * bootstraps, serves, creates a sandboxed machine and runs a command in it. It embeds a Node pinned
 * in package.json's nodeLines (the newest LTS there), whichever Node built it, and says which.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { destroyMachines, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { decode, runningMachine, sh } from "../support/Machines.js"
import { freePort, tempDir } from "../support/TestServer.js"

/**
 * Runs `file` with only `env` for environment; answers its exit code and output. Not spawnSync: the
 * build takes a minute on a loaded host, and a worker blocked that long loses vitest's RPC.
 */
const runAlone = (file: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, timeout = 60_000) =>
  Effect.async<{ status: number; stdout: string; stderr: string }>((resume) => {
    NodeChild.execFile(
      file,
      args,
      { env, encoding: "utf8", timeout },
      (error, stdout, stderr) =>
        resume(Effect.succeed({
          status: error === null ? 0 : typeof error.code === "number" ? error.code : 1,
          stdout,
          stderr
        }))
    )
  })

describe("the single executable", () => {
  it.scopedLive("runs alone under env -i: bootstrap, serve, a machine, a command", () =>
    Effect.gen(function*() {
      const built = yield* runAlone(process.execPath, ["bin/build.mjs", "--single"], process.env, 240_000)
      assert.strictEqual(built.status, 0, built.stderr)
      const embedded = /node v(\d+\.\d+\.\d+)$/m.exec(built.stderr)?.[1]
      const pinned = JSON.parse(NodeFs.readFileSync("package.json", "utf8")).nodeLines
      assert.include(Object.values(pinned), embedded, built.stderr)
      const folder = yield* tempDir
      const file = NodePath.join(folder, "svc")
      NodeFs.copyFileSync("dist/svc-linux-x64", file)
      NodeFs.chmodSync(file, 0o755)
      assert.deepStrictEqual(NodeFs.readdirSync(folder), ["svc"])
      const dataDir = NodePath.join(folder, "data")
      yield* Effect.addFinalizer(() => destroyMachines(dataDir, "sandbox"))
      const port = yield* freePort
      const env = { HOME: folder, SVC_DATA_DIR: dataDir, SVC_PORT: String(port), SVC_RUNTIME: "sandbox" }

      const version = yield* runAlone(file, ["--version"], env)
      assert.strictEqual(version.status, 0, version.stderr)
      assert.strictEqual(version.stderr, "", "no warning on a plain run")
      assert.strictEqual(version.stdout.trim(), `0.1.0 (node v${embedded})`)
      const boot = yield* runAlone(file, ["admin", "bootstrap", "--email", "one@example.com"], env)
      assert.strictEqual(boot.status, 0, boot.stderr)

      yield* serve(env, [file], { alone: true })
      const api = client(`http://127.0.0.1:${port}`, { key: JSON.parse(boot.stdout).api_key })
      const id = yield* runningMachine(api, "alone")
      const ran = yield* sh(api, id, "echo from-the-single-file; test -e /proc/1")
      assert.strictEqual(ran.exec_result.exit_code, 0)
      assert.strictEqual(decode(ran.exec_result.stdout_base64), "from-the-single-file\n")
    }), 300_000)
})
