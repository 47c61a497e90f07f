/**
 * Housekeeping (src/kernel/sql/Sweeps.ts, each owner's sweep) on TestClock: expired port tokens go,
 * idempotency keys of settled operations stop replaying after a day, and a key of an operation that is still open
 * keeps picking it up however old it is.
 */
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, TestClock } from "effect"
import { change, eventually, runningMachine, settled } from "../support/Machines.js"
import { smallHost } from "../support/TestServer.js"

const count = (file: string, table: string, where = "1") => {
  const db = new Database(file, { readonly: true })
  try {
    return (db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`).get() as { n: number }).n
  } finally {
    db.close()
  }
}

describe("housekeeping", () => {
  it.scoped(
    "expired port tokens and day-old keys of settled operations are deleted; open ones are kept",
    () =>
      Effect.gen(function*() {
        const { api, server } = yield* smallHost(1, 7 * 24 * 3600)
        const id = yield* runningMachine(api, "busy")
        yield* change(api, "POST", `/v1/machines/${id}/ports`, { port: 8000 })
        const token = yield* api("POST", `/v1/machines/${id}/ports/8000/tokens`, { json: { expires_in_seconds: 60 } })
        assert.strictEqual(token.status, 201)

        const exec = { shell: "echo once" }
        const first = yield* api("POST", `/v1/machines/${id}/exec`, {
          json: exec,
          headers: { "idempotency-key": "done" }
        })
        yield* settled(api, first.body.operation_id)
        // A boot that waits in the start queue (the host runs one machine): its operation stays open.
        const waiting = { name: "waiting", start: true }
        const queued = yield* api("POST", "/v1/machines", { json: waiting, headers: { "idempotency-key": "open" } })
        yield* eventually(Effect.map(
          api("GET", `/v1/operations/${queued.body.operation_id}`),
          (reply) => reply.body.starting_soon === null ? undefined : true
        ))
        assert.strictEqual(count(server.config.databaseFile, "port_tokens"), 1)

        // A day on, then an hour at a time until a sweep has run: a sweep's commit waits for a real flush
        // of the log, so the sweep may sleep again only after one long adjustment has gone by.
        yield* TestClock.adjust("24 hours")
        yield* eventually(Effect.gen(function*() {
          yield* TestClock.adjust("1 hour")
          const file = server.config.databaseFile
          return count(file, "port_tokens") === 0 && count(file, "idempotency_keys", "idempotency_key = 'done'") === 0
            ? true
            : undefined
        }))

        // The settled operation's key is gone: the same key with another body is a new operation, not a conflict.
        const again = yield* api("POST", `/v1/machines/${id}/exec`, {
          json: { shell: "echo twice" },
          headers: { "idempotency-key": "done" }
        })
        assert.strictEqual(again.status, 202)
        assert.notStrictEqual(again.body.operation_id, first.body.operation_id)
        // The open operation's key still replays it.
        const replay = yield* api("POST", "/v1/machines", { json: waiting, headers: { "idempotency-key": "open" } })
        assert.strictEqual(replay.status, 202)
        assert.strictEqual(replay.body.operation_id, queued.body.operation_id)
      }),
    { timeout: 120_000 }
  ) // a simulated day runs every periodic worker's rounds (the meter's, the abuse guard's)
})
