/**
 * The `svc` binary as users run it: a real `svc serve` process on a loopback port, `svc admin
 * bootstrap` against the same data dir while it runs and while it does not, and the one-line
 * answer to a malformed setting.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { buildBundle, bundle, destroyMachines, kill, run, serve } from "../support/Binary.js"
import { request } from "../support/Http.js"
import { eventually } from "../support/Machines.js"
import { freePort, tempDir } from "../support/TestServer.js"

const bootstrapLine =
  /^\{"user_id":"[0-9a-f-]{36}","organization_id":"[0-9a-f-]{36}","api_key":"svc_[a-z0-9]{8}_\w{32,}"\}\n$/

/** Per test: each `svc` run from the sources (tsx) took 20-27 s at a load average of 15 on 2 cores (the bundle now). */
const starts = 180_000

describe("svc binary", () => {
  it.scoped("bootstrap works while the server runs, and the key it prints is accepted", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const port = yield* freePort
      // Process driver: no machine in this test, and svc starts without the sandbox's host probes.
      yield* serve({ SVC_DATA_DIR: dataDir, SVC_PORT: String(port), SVC_RUNTIME: "process" })
      const boot = yield* run([
        "admin",
        "bootstrap",
        "--email",
        "Admin@Example.com",
        "--org",
        "Home",
        "--data-dir",
        dataDir
      ])
      assert.strictEqual(boot.code, 0, boot.stderr)
      assert.match(boot.stdout, bootstrapLine)
      const { api_key, organization_id } = JSON.parse(boot.stdout)
      const me = yield* request(`http://127.0.0.1:${port}`, "GET", "/v1/me", {
        headers: { authorization: `Bearer ${api_key}` }
      })
      assert.strictEqual(me.status, 200)
      assert.strictEqual(me.body.user.email, "admin@example.com")
      assert.deepStrictEqual(me.body.organizations.map((o: any) => [o.id, o.name, o.role]), [
        [organization_id, "Home", "owner"]
      ])
    }), starts)

  it.scoped(
    "bootstrap works with no server, and again for the same user without a second organization",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        const first = yield* run(["admin", "bootstrap", "--email", "solo@example.com", "--data-dir", dataDir])
        const second = yield* run(["admin", "bootstrap", "--email", "solo@example.com"], { SVC_DATA_DIR: dataDir })
        assert.match(first.stdout, bootstrapLine)
        assert.match(second.stdout, bootstrapLine)
        const [a, b] = [JSON.parse(first.stdout), JSON.parse(second.stdout)]
        assert.strictEqual(a.user_id, b.user_id)
        assert.strictEqual(a.organization_id, b.organization_id)
        assert.notStrictEqual(a.api_key, b.api_key)
      }),
    starts
  )

  it.scoped(
    "bootstrap refuses an address that is not one with one line, and opens nothing",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        const result = yield* run(["admin", "bootstrap", "--email", "notanemail", "--data-dir", dataDir])
        assert.strictEqual(result.code, 2)
        assert.strictEqual(result.stdout, "")
        assert.strictEqual(result.stderr, "svc: --email: \"notanemail\" is not an email address\n")
        assert.isFalse(NodeFs.existsSync(NodePath.join(dataDir, "svc.db")))
      }),
    starts
  )

  it.scoped(
    "a second svc on the same data dir refuses with one line naming the first; after a kill -9 it starts",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        // Process driver: no machine in this test, and svc starts without the sandbox's host probes.
        const env = { SVC_DATA_DIR: dataDir, SVC_RUNTIME: "process" }
        const first = yield* serve({ ...env, SVC_PORT: String(yield* freePort) })
        const second = yield* run(["serve"], { ...env, SVC_PORT: String(yield* freePort) })
        assert.strictEqual(second.code, 1)
        assert.strictEqual(
          second.stderr,
          `svc: the data dir ${dataDir} is in use by another svc process (pid ${first.pid}); ` +
            "stop it first or start this one with another --data-dir\n"
        )
        // The lock is the kernel's: it goes with the process, so nothing stale stops the next start.
        yield* kill(first)
        yield* serve({ ...env, SVC_PORT: String(yield* freePort) })
      }),
    starts
  )

  it.scoped("a port in use stops the start with one clear line", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      // Process driver: no machine in this test, and svc starts without the sandbox's host probes.
      yield* serve({ SVC_DATA_DIR: yield* tempDir, SVC_RUNTIME: "process", SVC_PORT: String(port) })
      const second = yield* run(["serve"], {
        SVC_DATA_DIR: yield* tempDir,
        SVC_RUNTIME: "process",
        SVC_PORT: String(port)
      })
      assert.strictEqual(second.code, 1)
      // The process driver's warning comes first; the refusal is the last line.
      assert.strictEqual(
        second.stderr.split("\n").at(-2),
        `svc: 127.0.0.1:${port} is already in use; stop what listens there or choose another with --port or SVC_PORT`
      )
    }), starts)

  it.effect("a malformed setting stops the start with one line naming the variable", () =>
    Effect.gen(function*() {
      const result = yield* run(["serve"], { SVC_PORT: "not-a-port" })
      assert.strictEqual(result.code, 1)
      assert.strictEqual(result.stdout, "")
      assert.match(result.stderr, /^svc: invalid configuration: SVC_PORT: [^\n]+\n$/)
    }), starts)

  it.scoped(
    "without bubblewrap the service still starts; machine changes answer 503 runtime_unavailable",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        const port = yield* freePort
        // No PATH: bwrap cannot be found, as on a fresh machine without the bubblewrap package.
        yield* serve({ SVC_DATA_DIR: dataDir, SVC_PORT: String(port), SVC_BILLING: "unlimited", PATH: "/nonexistent" })
        const boot = yield* run(["admin", "bootstrap", "--email", "fresh@example.com", "--data-dir", dataDir])
        const headers = { authorization: `Bearer ${JSON.parse(boot.stdout).api_key}` }
        const base = `http://127.0.0.1:${port}`
        assert.strictEqual((yield* request(base, "GET", "/v1/me", { headers })).status, 200)
        const create = yield* request(base, "POST", "/v1/machines", { headers, json: { name: "first" } })
        assert.strictEqual(create.status, 503)
        assert.strictEqual(create.body.code, "runtime_unavailable")
        assert.match(create.body.detail, /bwrap not found/)
        assert.deepStrictEqual((yield* request(base, "GET", "/v1/machines", { headers })).body.items, [])
      }),
    starts
  )

  it.scopedLive(
    "the bundle npm start runs (dist/svc) serves the same API and runs sandboxed machines",
    () =>
      Effect.gen(function*() {
        yield* buildBundle
        const dataDir = yield* tempDir
        const port = yield* freePort
        yield* Effect.addFinalizer(() => destroyMachines(dataDir, "sandbox"))
        yield* serve({ SVC_DATA_DIR: dataDir, SVC_PORT: String(port), SVC_BILLING: "unlimited" }, bundle)
        const boot = yield* run(
          ["admin", "bootstrap", "--email", "bundle@example.com", "--data-dir", dataDir],
          {},
          bundle
        )
        assert.strictEqual(boot.code, 0, boot.stderr)
        const headers = { authorization: `Bearer ${JSON.parse(boot.stdout).api_key}` }
        const base = `http://127.0.0.1:${port}`
        const create = yield* request(base, "POST", "/v1/machines", { headers, json: { name: "bundled", start: true } })
        assert.strictEqual(create.status, 202)
        const exec = yield* request(base, "POST", `/v1/machines/${create.body.machine_id}/exec`, {
          headers,
          json: { shell: "echo from the bundle" }
        })
        assert.strictEqual(exec.status, 202)
        const done = yield* eventually(Effect.map(
          request(base, "GET", `/v1/operations/${exec.body.operation_id}`, { headers }),
          (reply) => reply.body.status === "succeeded" || reply.body.status === "failed" ? reply : undefined
        ))
        assert.strictEqual(Buffer.from(done.body.exec_result.stdout_base64, "base64").toString(), "from the bundle\n")
      }),
    120_000
  )
})
