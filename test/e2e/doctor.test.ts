/**
 * `svc doctor` on this host (which runs the sandbox driver's tests, so has what it needs), then on
 * the same host made to lack things for real: a PATH without bwrap, a data dir under a file, the
 * listen port taken by another process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodeNet from "node:net"
import * as NodePath from "node:path"
import { runCli } from "../support/Cli.js"
import { freePort, tempDir } from "../support/TestServer.js"

const env = { SVC_LOG_LEVEL: "none", SVC_RUNTIME: undefined, SVC_HOST: undefined, SVC_PORT: undefined }

/** A server holding a loopback port until the scope ends. */
const heldPort = Effect.acquireRelease(
  Effect.async<NodeNet.Server>((resume) => {
    const server = NodeNet.createServer()
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
)

describe("svc doctor", () => {
  it.scopedLive(
    "passes on a host with everything; names what to install for what is missing, exit code 1",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const port = yield* freePort
        const healthy = yield* runCli(["doctor", "--data-dir", NodePath.join(dir, "data"), "--port", String(port)], env)
        assert.strictEqual(healthy.code, 0, healthy.stdout + healthy.stderr)
        assert.notMatch(healthy.stdout, /^FAIL/m)
        for (
          const name of ["bwrap", "slirp4netns", "nft", "mkfs.ext4", "losetup", "fsfreeze", "perl", "loop devices"]
        ) {
          assert.match(healthy.stdout, new RegExp(`^ok +${name.replace(".", "\\.")} `, "m"), name)
        }
        assert.match(healthy.stdout, /^ok +cgroup memory /m)
        assert.match(healthy.stdout, /^ok +data dir /m)
        assert.match(healthy.stdout, new RegExp(`^ok +listen address +127\\.0\\.0\\.1:${port} is free`, "m"))
        assert.match(healthy.stdout, /this host can run svc/)

        // Every program of /usr/bin and /usr/sbin but bwrap, as a host without bubblewrap has.
        const bin = NodePath.join(dir, "bin")
        NodeFs.mkdirSync(bin)
        for (const folder of ["/usr/bin", "/usr/sbin"]) {
          for (const name of NodeFs.readdirSync(folder)) {
            const link = NodePath.join(bin, name)
            if (name !== "bwrap" && !NodeFs.existsSync(link)) NodeFs.symlinkSync(NodePath.join(folder, name), link)
          }
        }
        const file = NodePath.join(dir, "a-file")
        NodeFs.writeFileSync(file, "")
        const taken = (yield* heldPort).address() as NodeNet.AddressInfo
        const lacking = yield* runCli(
          ["doctor", "--data-dir", NodePath.join(file, "data"), "--port", String(taken.port)],
          { ...env, PATH: bin }
        )
        assert.strictEqual(lacking.code, 1, lacking.stdout + lacking.stderr)
        assert.match(lacking.stdout, /^FAIL +bwrap +not found; .*apt-get install bubblewrap$/m)
        assert.match(lacking.stdout, /^FAIL +user namespaces +not checked: needs bwrap/m)
        assert.match(lacking.stdout, /^ok +slirp4netns /m)
        assert.match(lacking.stdout, /^FAIL +data dir +ENOTDIR/m)
        assert.match(lacking.stdout, /^FAIL +isolation +not checked: needs a writable data dir/m)
        assert.match(lacking.stdout, new RegExp(`^FAIL +listen address +127\\.0\\.0\\.1:${taken.port} in use`, "m"))
        assert.match(lacking.stdout, /^svc doctor: 5 required checks failed/m)
      }),
    300_000
  )
})
