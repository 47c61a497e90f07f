/**
 * Restores and template creates on another host (docs/scale-out.md "Restores and templates on any
 * host"): two `svc serve` on one PostgreSQL, each its own data dir and host. A machine of host a is
 * snapshotted and saved as a template through a; a restore and a template create accepted through b
 * run on host b, whose node copies the manifest and the chunks its store misses from a's node, over
 * the signed internal routes. Judged from the hosts' folders: b's machines hold a's files; b's store
 * holds exactly the chunks the manifest names (a second create copies none). The internal routes
 * answer only a valid node signature, and never a file outside the store.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, TestClock, TestContext } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodePath from "node:path"
import { AppConfig } from "../../src/kernel/config/AppConfig.js"
import { nodeHeader, signNodeRequest } from "../../src/kernel/crypto/NodeRequests.js"
import { SecretBox } from "../../src/kernel/crypto/SecretBox.js"
import { chunkKeysOf } from "../../src/snapshots/store/ChunkStore.js"
import type { Manifest } from "../../src/snapshots/store/Manifest.js"
import { nodeEnv, run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { change, eventually, runningMachine, sh } from "../support/Machines.js"
import { startPostgres } from "../support/Postgres.js"
import { testConfig } from "../support/TestServer.js"

/** A GET sent as written (no URL normalization: `..` reaches the server as is). */
const rawGet = (port: number, path: string, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const request = NodeHttp.request({ host: "127.0.0.1", port, path, method: "GET", headers }, (response) => {
        const parts: Array<Buffer> = []
        response.on("data", (part) => parts.push(part))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(parts) }))
      })
      request.on("error", reject)
      request.end()
    })
  )

const chunkFilesOf = (dataDir: string) =>
  new Set(
    NodeFs.readdirSync(NodePath.join(dataDir, "snapshots", "chunks"), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile()).map((entry) => entry.name)
  )

const sha = (path: string) => NodeCrypto.createHash("sha256").update(NodeFs.readFileSync(path)).digest("hex")

describe("two nodes on PostgreSQL: restores and templates on another host", () => {
  it.scopedLive(
    "copy the missing chunks from the holder over signed requests, and only those",
    () =>
      Effect.gen(function*() {
        const server = yield* startPostgres
        const url = yield* server.database("chunks")
        const keys = NodeCrypto.randomBytes(32)
        const settings = (host: string) =>
          nodeEnv({
            // Process driver: the copy between stores is under test, not isolation.
            SVC_RUNTIME: "process",
            SVC_DATABASE_URL: url,
            SVC_SECRET_KEYS: keys.toString("base64"),
            SVC_HOST_ID: host
          })
        const a = yield* settings("host-a")
        const b = yield* settings("host-b")
        yield* serve(a.env)
        yield* serve(b.env)
        const boot = yield* run(["admin", "bootstrap", "--email", "chunks@example.com"], a.env)
        assert.strictEqual(boot.code, 0, boot.stderr)
        const key = JSON.parse(boot.stdout).api_key
        const apiA = client(a.url, { key })
        const apiB = client(b.url, { key })

        // A machine of host a with a few MiB of files, stopped, snapshotted and saved as a template.
        const source = yield* runningMachine(apiA, "source", { start: true })
        assert.strictEqual((yield* apiA("GET", `/v1/machines/${source}`)).body.host_id, "host-a")
        const filled = yield* sh(apiA, source, "head -c 3000000 /dev/urandom > big.bin && echo hello > note.txt")
        assert.strictEqual(filled.status, "succeeded", JSON.stringify(filled))
        const home = (dataDir: string, id: string) => NodePath.join(dataDir, "machines", id, "disk", "root")
        assert.isTrue(NodeFs.existsSync(NodePath.join(home(a.dataDir, source), "big.bin")))
        assert.strictEqual((yield* change(apiA, "POST", `/v1/machines/${source}/stop`)).status, "succeeded")
        const settledSnapshot = (id: string) =>
          eventually(
            Effect.map(
              apiA("GET", `/v1/snapshots/${id}`),
              (reply) => reply.body?.status === "ready" ? reply.body : undefined
            )
          )
        const pushed = yield* apiA("POST", `/v1/machines/${source}/snapshots`, { json: {} })
        assert.strictEqual(pushed.status, 202, pushed.text)
        const snapshot = yield* settledSnapshot(pushed.body.snapshot_id)
        const saved = yield* apiA("POST", "/v1/templates", { json: { machine_id: source, name: "base" } })
        assert.strictEqual(saved.status, 202, saved.text)
        yield* settledSnapshot(saved.body.snapshot_id)

        // The internal routes on a: a valid signature of this very path, else 404.
        const boxOf = (secret: Buffer) =>
          SecretBox.layer.pipe(Layer.provide(Layer.succeed(AppConfig, {
            ...testConfig("/nonexistent-data-dir", 9),
            secretKeys: { kind: "given", keys: [Redacted.make(secret)] }
          })))
        const signed = (path: string, at = Date.now(), secret = keys) =>
          Effect.gen(function*() {
            yield* TestClock.setTime(at)
            return yield* signNodeRequest("GET", path, "host-b")
          }).pipe(Effect.provide(boxOf(secret)), Effect.provide(TestContext.TestContext))
        const manifestPath = `/internal/snapshots/${snapshot.id}/manifest`
        const served = yield* rawGet(a.port, manifestPath, { [nodeHeader]: yield* signed(manifestPath) })
        assert.strictEqual(served.status, 200)
        assert.strictEqual(
          `sha256:${NodeCrypto.createHash("sha256").update(served.body).digest("hex")}`,
          snapshot.manifest
        )
        const manifest = JSON.parse(served.body.toString("utf8")) as Manifest
        const wanted = chunkKeysOf(manifest)
        assert.isAtLeast(wanted.size, 3)
        const aChunk = [...wanted][0]!
        const chunkPath = `/internal/chunks/warm/${aChunk}`
        assert.strictEqual((yield* rawGet(a.port, chunkPath, { [nodeHeader]: yield* signed(chunkPath) })).status, 200)
        const forged = yield* signed(chunkPath, Date.now(), NodeCrypto.randomBytes(32))
        for (
          const [path, header] of [
            [chunkPath, undefined],
            [chunkPath, "host-b.1.garbage"],
            [chunkPath, forged],
            [chunkPath, yield* signed(chunkPath, Date.now() - 120_000)],
            [chunkPath, yield* signed(manifestPath)],
            [`/internal/chunks/warm/../../svc.db`, yield* signed(`/internal/chunks/warm/../../svc.db`)],
            [`/internal/chunks/warm/..%2F..%2Fsvc.db`, yield* signed(`/internal/chunks/warm/..%2F..%2Fsvc.db`)],
            [
              `/internal/snapshots/..%2F..%2Fsvc.db/manifest`,
              yield* signed(`/internal/snapshots/..%2F..%2Fsvc.db/manifest`)
            ],
            [`/internal/chunks/warm/${"0".repeat(64)}`, yield* signed(`/internal/chunks/warm/${"0".repeat(64)}`)]
          ] as const
        ) {
          const answer = yield* rawGet(a.port, path, header === undefined ? {} : { [nodeHeader]: header })
          assert.strictEqual(answer.status, 404, `${path} ${header}`)
        }
        // Not in the public API's document.
        const openapi = yield* apiA("GET", "/v1/openapi.json")
        assert.notInclude(openapi.text, "/internal/")

        // A restore accepted through b runs on host b (placement's tie goes to the accepting node): a's files, b's store now holds exactly the chunks.
        assert.strictEqual(chunkFilesOf(b.dataDir).size, 0)
        const restore = yield* apiB("POST", `/v1/machines/${source}/restore`, {
          json: { name: "restored", snapshot_id: snapshot.id, start: false }
        })
        assert.strictEqual(restore.status, 202, restore.text)
        const restored = yield* eventually(
          Effect.map(
            apiB("GET", `/v1/operations/${restore.body.operation_id}`),
            (r) => ["succeeded", "failed"].includes(r.body?.status) ? r.body : undefined
          ),
          90_000
        )
        assert.strictEqual(restored.status, "succeeded", JSON.stringify(restored))
        const onB = restore.body.machine_id as string
        assert.strictEqual((yield* apiB("GET", `/v1/machines/${onB}`)).body.host_id, "host-b")
        for (const file of ["big.bin", "note.txt"]) {
          assert.strictEqual(
            sha(NodePath.join(home(b.dataDir, onB), file)),
            sha(NodePath.join(home(a.dataDir, source), file))
          )
        }
        assert.deepStrictEqual(chunkFilesOf(b.dataDir), new Set(wanted))

        // A create from the template (the same bytes) through b: its manifest moves, no chunk.
        const fromTemplate = yield* apiB("POST", "/v1/machines", {
          json: { name: "from-tpl", template: "base", start: false, host: "host-b" }
        })
        assert.strictEqual(fromTemplate.status, 202, fromTemplate.text)
        const made = yield* eventually(
          Effect.map(
            apiB("GET", `/v1/operations/${fromTemplate.body.operation_id}`),
            (r) => ["succeeded", "failed"].includes(r.body?.status) ? r.body : undefined
          ),
          90_000
        )
        assert.strictEqual(made.status, "succeeded", JSON.stringify(made))
        const templateMachine = (yield* apiB("GET", `/v1/machines/${fromTemplate.body.machine_id}`)).body
        assert.strictEqual(templateMachine.host_id, "host-b")
        assert.strictEqual(
          sha(NodePath.join(home(b.dataDir, templateMachine.id), "big.bin")),
          sha(NodePath.join(home(a.dataDir, source), "big.bin"))
        )
        assert.deepStrictEqual(chunkFilesOf(b.dataDir), new Set(wanted))
      }),
    300_000
  )
})
