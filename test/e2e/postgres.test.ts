/**
 * `svc serve` on PostgreSQL (`SVC_DATABASE_URL=postgres://...`, extensions.md §21, docs/scale-out.md):
 * a start without `SVC_SECRET_KEYS` is refused with one line; with them, `svc admin bootstrap` and
 * `svc serve` share the database, a machine is made and runs; and nothing accepted with 202 is lost
 * when svc is killed with SIGKILL in the middle of a burst of execs and started again, each exec run
 * once and in acceptance order (as test/e2e/durability.test.ts shows for SQLite).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeCrypto from "node:crypto"
import { nodeEnv, run, serve } from "../support/Binary.js"
import { eachRanOnceInOrder, execBurstKilledMidway } from "../support/Bursts.js"
import { client } from "../support/Http.js"
import { decode, runningMachine, sh } from "../support/Machines.js"
import { startPostgres } from "../support/Postgres.js"

const machines = 2
const perMachine = 30

/** svc's settings for a node on `url`, in a data dir of its own. */
const nodeOn = (url: string) =>
  nodeEnv({ SVC_DATABASE_URL: url, SVC_SECRET_KEYS: NodeCrypto.randomBytes(32).toString("base64") })

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

        const answered = yield* execBurstKilledMidway(api, ids, perMachine, first)

        yield* serve(env)
        yield* eachRanOnceInOrder(api, ids, answered, [hello.id])
      }),
    240_000
  )
})
