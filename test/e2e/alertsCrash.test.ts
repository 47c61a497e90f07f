/**
 * The alerts' outbox survives kill -9: `svc serve` (a separate process) is killed during a burst of
 * creates that fail (an image no driver has), each one an operation_failed alert for its requester
 * on its own machine; started again on its data dir, every alert accepted before the kill is mailed
 * at least once (its operation id is in an e-mail of the outbox folder).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodePath from "node:path"
import { readOutbox } from "../../src/kernel/mail/Outbox.js"
import { kill, nodeEnv, run, serve } from "../support/Binary.js"
import { client } from "../support/Http.js"
import { eventually } from "../support/Machines.js"

const burst = Number(process.env.BURST ?? 300)

describe("alerts across kill -9", () => {
  it.scopedLive("every alert of an accepted, failed operation is mailed at least once", () =>
    Effect.gen(function*() {
      const { dataDir, env, url } = yield* nodeEnv({
        // Process driver: every create fails (an image no driver has), so no machine is ever made.
        SVC_RUNTIME: "process",
        SVC_LIMITS: JSON.stringify({ unlimited: { starts_per_hour: 100000 } })
      })
      const first = yield* serve(env)
      const boot = yield* run(["admin", "bootstrap", "--email", "crash@example.com", "--data-dir", dataDir], env)
      const api = client(url, { key: JSON.parse(boot.stdout).api_key })

      // The burst, 30 at a time; svc is killed once 40 % of it was accepted.
      const accepted = new Set<string>()
      let killed = false
      const one = (i: number) =>
        Effect.gen(function*() {
          if (killed) return
          const reply = yield* Effect.exit(
            api("POST", "/v1/machines", { json: { name: `b${i}`, image: "no-such-image", start: false } })
          )
          if (reply._tag === "Success" && reply.value.status === 202) accepted.add(reply.value.body.operation_id)
          if (!killed && accepted.size >= burst * 0.4) {
            killed = true
            yield* kill(first)
          }
        })
      yield* Effect.forEach(Array.from({ length: burst }, (_, i) => i), one, { concurrency: 30, discard: true })
      assert.isTrue(killed)
      const outbox = readOutbox(NodePath.join(dataDir, "outbox"))
      const before = (yield* outbox).length

      const second = yield* serve(env)
      const mailed = yield* eventually(
        Effect.map(outbox, (mails) => {
          const text = mails.map((m) => m.text).join("\n")
          return [...accepted].every((id) => text.includes(id)) ? mails : undefined
        }),
        90_000
      )
      assert.isTrue(mailed.every((m) => m.to === "crash@example.com" && m.headers["List-Unsubscribe"] !== undefined))
      // Every create failed for good: each operation is one alert, on its own machine (no window).
      const operation = yield* api("GET", `/v1/operations/${[...accepted][0]}`)
      assert.strictEqual(operation.body.status, "failed")
      console.log(`accepted before the kill: ${accepted.size}; mailed before: ${before}; after: ${mailed.length}`)
      yield* kill(second)
    }), 180_000)
})
