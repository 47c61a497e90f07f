/**
 * Starts that cannot succeed end promptly with one line, and SIGTERM ends svc, on the real binary
 * (a separate `svc serve` process). A port in use and a malformed setting: test/e2e/cli.test.ts.
 * No test here bounds a time: a start that hung would fail on the test's timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeNet from "node:net"
import * as NodePath from "node:path"
import { checkout, run, serve } from "../support/Binary.js"
import { freePort, tempDir } from "../support/TestServer.js"

/** Waits for `child` to end: its exit code, or the signal that ended it, and what it wrote on stderr. */
const ended = (child: NodeChild.ChildProcess, stderr: () => string) =>
  Effect.async<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      return resume(Effect.succeed({ code: child.exitCode, signal: child.signalCode, stderr: stderr() }))
    }
    child.on("exit", (code, signal) => resume(Effect.succeed({ code, signal, stderr: stderr() })))
  })

describe("svc serve: starts that cannot succeed, and SIGTERM", () => {
  it.effect(
    "a data dir where no folder can be made (/proc/nope) ends the start with one line",
    () =>
      Effect.gen(function*() {
        // Node's recursive mkdir spun a core forever here, deaf to SIGTERM (src/kernel/Folders.ts).
        const result = yield* run(["serve", "--data-dir", "/proc/nope", "--port", String(yield* freePort)])
        assert.strictEqual(result.code, 1)
        assert.strictEqual(
          result.stderr,
          "svc: cannot use the data dir /proc/nope (ENOENT: no such file or directory, mkdir '/proc/nope'); " +
            "choose another with --data-dir or SVC_DATA_DIR\n"
        )
      }).pipe(Effect.scoped),
    120_000
  )

  it.scoped(
    "a database file that is not a database, or a folder, ends the start with one line",
    () =>
      Effect.gen(function*() {
        const garbled = yield* tempDir
        NodeFs.writeFileSync(NodePath.join(garbled, "svc.db"), Buffer.alloc(8192, 0x5a))
        const folder = yield* tempDir
        NodeFs.mkdirSync(NodePath.join(folder, "svc.db"))
        const [first, second] = yield* Effect.all(
          [garbled, folder].map((dataDir) =>
            Effect.flatMap(freePort, (port) => run(["serve", "--data-dir", dataDir, "--port", String(port)]))
          ),
          { concurrency: 2 }
        )
        assert.strictEqual(first!.code, 1)
        assert.strictEqual(
          first!.stderr,
          `svc: cannot open the database ${NodePath.join(garbled, "svc.db")} (file is not a database)\n`
        )
        assert.strictEqual(second!.code, 1)
        const database = NodePath.join(folder, "svc.db")
        assert.strictEqual(
          second!.stderr,
          `svc: cannot open the database ${database} (EISDIR: illegal operation on a directory, open '${database}')\n`
        )
      }),
    120_000
  )

  it.scoped("SIGTERM while the server is being built ends it", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const child = NodeChild.spawn(checkout()[0], [...checkout().slice(1), "serve"], {
        env: {
          ...process.env,
          SVC_DATA_DIR: dataDir,
          SVC_PORT: String(yield* freePort),
          // Process driver: no machine in this test, and svc starts without the sandbox's host probes.
          SVC_RUNTIME: "process",
          // The migrations' debug lines show that the build has begun.
          SVC_LOG_LEVEL: "debug"
        }
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
      let stderr = ""
      child.stderr.on("data", (chunk) => {
        stderr += chunk
        if (stderr.includes("Running migration")) child.kill("SIGTERM")
      })
      const end = yield* ended(child, () => stderr)
      assert.strictEqual(end.code, 0, end.stderr)
      assert.notInclude(end.stderr, "still stopping")
    }), 120_000)

  it.scoped(
    "SIGTERM while serving ends it, a client holding a half-sent request included",
    () =>
      Effect.gen(function*() {
        const port = yield* freePort
        // Process driver: no machine in this test, and svc starts without the sandbox's host probes.
        const child = yield* serve({ SVC_DATA_DIR: yield* tempDir, SVC_PORT: String(port), SVC_RUNTIME: "process" })
        let stderr = ""
        child.stderr!.on("data", (chunk) => (stderr += chunk))
        // Node's server.close waits for this connection: svc drops it after a drain (src/Http.ts).
        const socket = yield* Effect.async<NodeNet.Socket>((resume) => {
          const connection = NodeNet.connect(port, "127.0.0.1", () => {
            connection.write("GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            resume(Effect.succeed(connection))
          })
          connection.on("error", () => {})
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => socket.destroy()))
        child.kill("SIGTERM")
        const end = yield* ended(child, () => stderr)
        assert.strictEqual(end.code, 0, end.stderr)
        assert.notInclude(end.stderr, "still stopping")
      }),
    120_000
  )
})
