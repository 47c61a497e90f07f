/**
 * `svc files put|get` against a real server: a 20 MiB file in and out unchanged, a chunk at a time;
 * the CLI's peak memory does not grow with the file (a 60 MiB put peaks within a few chunks'
 * garbage of a 20 MiB one); a server with a small body limit makes the CLI halve its chunks rather
 * than fail; stdin and stdout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { makeClient } from "../../src/index.js"
import { cliFor } from "../support/Cli.js"
import { startServer, tempDir } from "../support/TestServer.js"

const MiB = 1024 * 1024

const setup = (maxBodyBytes: number) =>
  Effect.gen(function*() {
    const server = yield* startServer({ maxBodyBytes })
    const owner = yield* server.bootstrap("files@example.com")
    const client = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
    yield* client.waitOperation(yield* client.machines.create({ payload: { name: "files" } }))
    const cli = yield* cliFor(server.url, owner.api_key)
    const dir = yield* tempDir
    const file = (name: string, size: number) => {
      const path = NodePath.join(dir, name)
      NodeFs.writeFileSync(path, NodeCrypto.randomBytes(size))
      return path
    }
    // A path in the machine (its own /workspace, not the host's).
    const remote = (name: string) => `/workspace/remote-${name}`
    return { cli, dir, file, remote }
  })

/** Peak resident memory in KiB, from GNU time's last stderr line. */
const peakKiB = (stderr: string) => Number(/rss=(\d+)\s*$/.exec(stderr)![1])
const timed = ["/usr/bin/time", "-f", "rss=%M"]

describe("svc CLI: files", () => {
  it.scopedLive(
    "a 20 MiB file goes in and comes out unchanged; peak memory does not grow with the file",
    () =>
      Effect.gen(function*() {
        const { cli, dir, file, remote } = yield* setup(24 * MiB)
        const twenty = file("twenty", 20 * MiB)
        const put = yield* cli.run(["files", "put", "files", twenty, remote("twenty")], { wrapper: timed })
        assert.strictEqual(put.code, 0, put.stderr)
        const back = NodePath.join(dir, "back")
        const get = yield* cli.run(["files", "get", "files", remote("twenty"), back])
        assert.strictEqual(get.code, 0, get.stderr)
        assert.isTrue(NodeFs.readFileSync(back).equals(NodeFs.readFileSync(twenty)))
        assert.isFalse(NodeFs.existsSync(`${back}.svc-part`))

        // Three times the data through the same chunks: whole-file buffering would add the 40 MiB more,
        // its base64 and the request's copy (over 140 MiB); a chunked copy peaks within a few chunks'
        // garbage of the smaller run (4 MiB chunks, each with its base64 and request: up to 48.2 MiB
        // more was seen when a collection came late, so the bound leaves that room).
        const sixty = file("sixty", 60 * MiB)
        const bigPut = yield* cli.run(["files", "put", "files", sixty, remote("sixty")], { wrapper: timed })
        assert.strictEqual(bigPut.code, 0, bigPut.stderr)
        const [small, large] = [peakKiB(put.stderr), peakKiB(bigPut.stderr)]
        assert.isBelow(large - small, 96 * 1024, `peak RSS ${small} KiB for 20 MiB, ${large} KiB for 60 MiB`)
        const size = yield* cli.run(["machines", "exec", "files", "--", "stat", "-c", "%s", remote("sixty")])
        assert.strictEqual(size.stdout, `${60 * MiB}\n`)
      }),
    600_000
  )

  it.scopedLive(
    "chunks too large for the server's body limit are halved; stdin in, stdout out; a missing file is exit 1",
    () =>
      Effect.gen(function*() {
        const { cli, dir, file, remote } = yield* setup(2 * MiB)
        const five = file("five", 5 * MiB + 123)
        const put = yield* cli.run(["files", "put", "files", five, remote("five"), "--mode", "600"])
        assert.strictEqual(put.code, 0, put.stderr)
        const back = NodePath.join(dir, "five-back")
        const get = yield* cli.run(["files", "get", "files", remote("five"), back, "--chunk-size", String(MiB)])
        assert.strictEqual(get.code, 0, get.stderr)
        assert.isTrue(NodeFs.readFileSync(back).equals(NodeFs.readFileSync(five)))
        const mode = yield* cli.run(["machines", "exec", "files", "--", "stat", "-c", "%a", remote("five")])
        assert.strictEqual(mode.stdout, "600\n")

        const piped = yield* cli.run(["files", "put", "files", "-", remote("piped")], { input: "line one\nline two\n" })
        assert.strictEqual(piped.code, 0, piped.stderr)
        const out = yield* cli.run(["files", "get", "files", remote("piped")])
        assert.strictEqual(out.stdout, "line one\nline two\n")
        const missing = yield* cli.run(["files", "get", "files", remote("nothing-here"), NodePath.join(dir, "x")])
        assert.strictEqual(missing.code, 1)
        assert.strictEqual(missing.stderr, `svc: ${remote("nothing-here")}: no such file in the machine\n`)
        assert.isFalse(NodeFs.existsSync(NodePath.join(dir, "x")))
        assert.isFalse(NodeFs.existsSync(NodePath.join(dir, "x.svc-part")))
      }),
    300_000
  )
})
