/**
 * `svc serve` on PostgreSQL (`SVC_DATABASE_URL=postgres://...`, extensions.md §21, docs/scale-out.md):
 * a start without `SVC_SECRET_KEYS` is refused with one line; with them, `svc admin bootstrap` and
 * `svc serve` share the database, a machine is made and runs; and nothing accepted with 202 is lost
 * when svc is killed with SIGKILL in the middle of a burst of execs and started again, each exec run
 * once and in acceptance order (as test/e2e/durability.test.ts shows for SQLite).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import * as NodeCrypto from "node:crypto"
import { destroyMachines, kill, run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { decode, eventually, runningMachine, settled, sh } from "../support/Machines.js"
import { startPostgres } from "../support/Postgres.js"
import { freePort, tempDir } from "../support/TestServer.js"

const machines = 2
const perMachine = 30

/** svc's settings for a node on `url`, in a data dir of its own. */
const nodeOn = (url: string) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDir
    yield* Effect.addFinalizer(() => destroyMachines(dataDir, "sandbox"))
    const port = yield* freePort
    const env = {
      SVC_DATA_DIR: dataDir,
      SVC_PORT: String(port),
      SVC_RUNTIME: "sandbox",
      SVC_BILLING: "unlimited",
      SVC_DATABASE_URL: url,
      SVC_SECRET_KEYS: NodeCrypto.randomBytes(32).toString("base64")
    }
    return { dataDir, port, env }
  })

describe("svc on PostgreSQL", () => {
  // One test, so one server and one svc start serve every step (each start costs seconds in CI).
  it.scopedLive(
    "refuses a start without SVC_SECRET_KEYS; a SIGKILL in a burst loses and repeats nothing",
    () =>
      Effect.gen(function*() {
        const server = yield* startPostgres
        const { env, port } = yield* nodeOn(yield* server.database("durable"))
        const refused = yield* run(["serve"], { ...env, SVC_SECRET_KEYS: "" })
        assert.notStrictEqual(refused.code, 0)
        assert.include(refused.stderr, "SVC_SECRET_KEYS")

        const first = yield* serve(env)
        const boot = yield* run(["admin", "bootstrap", "--email", "ops@example.com"], env)
        assert.strictEqual(boot.code, 0, boot.stderr)
        const api = client(`http://127.0.0.1:${port}`, { key: JSON.parse(boot.stdout).api_key })
        const ids = yield* Effect.all(
          Array.from({ length: machines }, (_, index) => runningMachine(api, `m${index}`)),
          { concurrency: "unbounded" }
        )
        const hello = yield* sh(api, ids[0]!, "echo hello")
        assert.strictEqual(decode(hello.exec_result.stdout_base64), "hello\n")

        // Per machine, requests go one after another, so acceptance order is the order of `n`.
        const answered = ids.map(() => [] as Array<string>)
        const burst = Effect.forEach(ids, (id, index) =>
          Effect.gen(function*() {
            for (let n = 0; n < perMachine; n++) {
              const reply = yield* Effect.exit(api("POST", `/v1/machines/${id}/exec`, {
                json: { shell: `echo ${n} >> /workspace/log; sleep 0.01` }
              }))
              if (Exit.isFailure(reply)) return // the server is gone
              assert.strictEqual(reply.value.status, 202)
              answered[index]!.push(reply.value.body.operation_id)
            }
          }), { concurrency: "unbounded", discard: true })
        const fiber = yield* Effect.fork(burst)
        yield* eventually(Effect.sync(() => answered.flat().length >= (machines * perMachine) / 2 ? true : undefined))
        yield* kill(first)
        yield* Fiber.join(fiber)
        assert.isBelow(answered.flat().length, machines * perMachine, "the kill came in the middle of the burst")

        yield* serve(env)
        for (const [index, id] of ids.entries()) {
          for (const operationId of answered[index]!) {
            const operation = yield* settled(api, operationId, 60_000)
            assert.strictEqual(operation.status, "succeeded", JSON.stringify(operation))
          }
          // An exec whose 202 was lost with the process may exist too: it is the next number.
          const execs = (yield* api("GET", `/v1/machines/${id}/operations?limit=100`)).body.items
            .filter((operation: any) => operation.kind === "exec" && operation.id !== hello.id)
          for (const operation of execs) yield* settled(api, operation.id, 60_000)
          assert.includeMembers(execs.map((operation: any) => operation.id), answered[index]!)
          assert.oneOf(execs.length - answered[index]!.length, [0, 1])
          const log = yield* sh(api, id, "cat /workspace/log")
          const lines = decode(log.exec_result.stdout_base64).trim().split("\n").map(Number)
          assert.deepStrictEqual(lines, Array.from({ length: execs.length }, (_, n) => n), `machine ${index}`)
        }
      }),
    240_000
  )
})
