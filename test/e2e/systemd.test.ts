/**
 * `svc admin install-systemd`: the unit passes `systemd-analyze verify` and signals svc alone on a
 * stop (KillMode=process: machines keep running for the next start to adopt), and the service it
 * describes starts from the settings file it wrote (run here without systemd: its ExecStart with
 * its EnvironmentFile).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { freePort, tempDir } from "../support/TestServer.js"

describe("install-systemd", () => {
  it.scopedLive("writes a unit systemd accepts and settings the service starts with", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const port = yield* freePort
      const [unitDir, configDir, dataDir] = ["units", "etc", "data"].map((name) => NodePath.join(root, name))
      const bin = NodePath.resolve("bin/svc.mjs")
      const installed = yield* run([
        "admin",
        "install-systemd",
        "--bin",
        bin,
        "--unit-dir",
        unitDir!,
        "--config-dir",
        configDir!,
        "--data-dir",
        dataDir!,
        "--port",
        String(port)
      ])
      assert.strictEqual(installed.code, 0, installed.stderr)
      const unitFile = NodePath.join(unitDir!, "svc.service")
      const unit = NodeFs.readFileSync(unitFile, "utf8")
      assert.include(unit, `ExecStart=${bin} serve`)
      assert.include(unit, "KillMode=process")
      assert.include(unit, "Restart=on-failure")
      const verified = NodeChild.spawnSync("systemd-analyze", ["verify", unitFile], { encoding: "utf8" })
      assert.strictEqual(verified.status, 0, verified.stderr)
      assert.strictEqual(verified.stderr.trim(), "")

      const environmentFile = NodePath.join(configDir!, "svc.env")
      assert.strictEqual(NodeFs.statSync(environmentFile).mode & 0o777, 0o640)
      assert.strictEqual(NodeFs.statSync(dataDir!).mode & 0o777, 0o750)
      const settings = Object.fromEntries(
        NodeFs.readFileSync(environmentFile, "utf8").split("\n").filter((line) => /^[A-Z_]+=/.test(line)).map((
          line
        ) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)])
      )
      assert.strictEqual(settings.SVC_DATA_DIR, dataDir)
      // A second run keeps the settings an operator may have edited.
      NodeFs.appendFileSync(environmentFile, "SVC_LOG_LEVEL=warning\n")
      yield* run(["admin", "install-systemd", "--bin", bin, "--unit-dir", unitDir!, "--config-dir", configDir!])
      assert.include(NodeFs.readFileSync(environmentFile, "utf8"), "SVC_LOG_LEVEL=warning")

      // What systemd would start: ExecStart with the settings file's environment (and a PATH for node).
      // Process driver: no machine in this test, and svc starts without the sandbox's host probes.
      yield* serve({ PATH: process.env.PATH!, ...settings, SVC_RUNTIME: "process", SVC_LOG_LEVEL: "info" }, [bin], {
        alone: true
      })
      const health = yield* client(`http://127.0.0.1:${port}`)("GET", "/v1/openapi.json")
      assert.strictEqual(health.status, 200)
      assert.isTrue(NodeFs.existsSync(NodePath.join(dataDir!, "svc.db")))
    }), 120_000)
})
