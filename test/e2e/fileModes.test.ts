/**
 * The data dir is svc's alone (extensions.md §5, Isolation): a new one is made 0700 with its
 * database (and `-wal`, `-shm`) and keys 0600, and one an older svc left readable by everyone is
 * fixed at start. Judged from the host's file modes, under the test runner's usual umask (022).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { client } from "../support/Http.js"
import { startServer, tempDir } from "../support/TestServer.js"

const modeOf = (path: string) => (NodeFs.statSync(path).mode & 0o777).toString(8)

/** Starts svc on `dataDir`, makes something that writes the database and a secret key, and answers the modes. */
const modesAfterStart = (dataDir: string) =>
  Effect.gen(function*() {
    const server = yield* startServer({
      dataDir,
      databaseFile: NodePath.join(dataDir, "svc.db"),
      secretKeys: { kind: "generated" }
    })
    const owner = yield* server.bootstrap("owner@example.com")
    // A webhook's signing secret is sealed with the generated key: the key file is made now.
    const made = yield* client(server.url, { key: owner.api_key })("POST", "/v1/webhooks", {
      json: { name: "hook", url: "http://127.0.0.1:9/hook", events: ["machine.created"] }
    })
    assert.strictEqual(made.status, 201, JSON.stringify(made.body))
    const modes: Record<string, string> = { ".": modeOf(dataDir) }
    for (const name of ["svc.db", "svc.db-wal", "svc.db-shm", "secret.key", "svc.lock"]) {
      modes[name] = modeOf(NodePath.join(dataDir, name))
    }
    return modes
  })

const private_ = {
  ".": "700",
  "svc.db": "600",
  "svc.db-wal": "600",
  "svc.db-shm": "600",
  "secret.key": "600",
  "svc.lock": "600"
}

describe("data dir file modes", () => {
  it.scopedLive(
    "a new data dir is 0700, its database, WAL, shared memory and key files 0600",
    () =>
      Effect.gen(function*() {
        const dataDir = NodePath.join(yield* tempDir, "fresh")
        assert.deepStrictEqual(yield* modesAfterStart(dataDir), private_)
      }),
    120_000
  )

  it.scopedLive("a data dir an older svc left readable is fixed at start", () =>
    Effect.gen(function*() {
      const dataDir = NodePath.join(yield* tempDir, "old")
      NodeFs.mkdirSync(dataDir, { mode: 0o755 })
      NodeFs.chmodSync(dataDir, 0o755)
      for (const name of ["svc.db", "svc.db-wal", "svc.db-shm"]) {
        NodeFs.writeFileSync(NodePath.join(dataDir, name), "")
        NodeFs.chmodSync(NodePath.join(dataDir, name), 0o644)
      }
      NodeFs.writeFileSync(NodePath.join(dataDir, "secret.key"), NodeCrypto.randomBytes(32).toString("base64") + "\n")
      NodeFs.chmodSync(NodePath.join(dataDir, "secret.key"), 0o644)
      assert.deepStrictEqual(yield* modesAfterStart(dataDir), private_)
    }), 120_000)
})
