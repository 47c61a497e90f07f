/**
 * The single executable (`npm run build:single`): copied alone into an empty folder and run with an
 * empty environment (no PATH, no node, no node_modules beside it) on a fresh data dir, it
 * bootstraps, serves, creates a sandboxed machine and runs a command in it. It embeds a Node pinned
 * in package.json's nodeLines (the newest LTS there), whichever Node built it, and says which; and
 * it starts and serves under the systemd unit's sandboxing (ProtectHome=read-only and the rest).
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
      // The ES-module bundle the build makes first goes to a folder of the test's own: dist/cli and
      // dist/svc are what test/e2e/cli.test.ts builds and runs, maybe at the same time (two workers).
      const scratch = NodePath.join(yield* tempDir, "cli", "svc.mjs")
      const built = yield* runAlone(
        process.execPath,
        ["bin/build.mjs", "--single", `--outfile=${scratch}`],
        process.env,
        240_000
      )
      assert.strictEqual(built.status, 0, built.stderr)
      assert.notMatch(built.stderr, /warning/i, "the build prints no warning")
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

      // The same file under the unit's sandboxing (src/cli/Systemd.ts; systemd-run is not available
      // here), reproduced as systemd does it, in a mount namespace of its own: ProtectSystem=full
      // (/usr, /boot, /efi, /etc read-only), ProtectHome=read-only (/home, /root, /run/user),
      // ReadWritePaths= the data dir and CacheDirectory= a writable $CACHE_DIRECTORY, HOME=/root as
      // for User=root. Its first start writes the SQLite addon, which once failed on /root/.cache.
      const unitData = NodePath.join(folder, "unit-data")
      const cache = NodePath.join(folder, "unit-cache")
      for (const dir of [unitData, cache]) NodeFs.mkdirSync(dir)
      const unitPort = yield* freePort
      const unitEnv = {
        HOME: "/root",
        SVC_DATA_DIR: unitData,
        SVC_PORT: String(unitPort),
        SVC_RUNTIME: "sandbox",
        CACHE_DIRECTORY: cache
      }
      const sandboxing = [
        "set -e",
        "for p in /usr /boot /efi /etc /home /root /run/user; do",
        "  if [ -d \"$p\" ]; then /bin/mount --bind \"$p\" \"$p\"; /bin/mount -o remount,bind,ro \"$p\"; fi",
        "done",
        "for p in \"$SVC_DATA_DIR\" \"$CACHE_DIRECTORY\"; do /bin/mount --bind \"$p\" \"$p\"; done",
        "exec \"$@\""
      ].join("\n")
      const underUnit: readonly [string, ...Array<string>] = [
        "/usr/bin/unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        sandboxing,
        "sh"
      ]
      // The reproduction is real: /root cannot be written in it, the data dir can.
      const probe = yield* runAlone(underUnit[0], [
        ...underUnit.slice(1),
        "/bin/sh",
        "-c",
        "/usr/bin/touch \"$SVC_DATA_DIR/probe\" && ! /usr/bin/touch /root/.svc-unit-probe 2>/dev/null"
      ], unitEnv)
      assert.strictEqual(probe.status, 0, probe.stderr)
      yield* serve(unitEnv, [...underUnit, file], { alone: true })
      const health = yield* client(`http://127.0.0.1:${unitPort}`)("GET", "/healthz")
      assert.strictEqual(health.status, 200)
      assert.deepStrictEqual(
        NodeFs.readdirSync(NodePath.join(cache, "native")).length,
        1,
        "the addon in CacheDirectory="
      )
    }), 300_000)
})
