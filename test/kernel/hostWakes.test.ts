/**
 * Work accepted on one node for a machine of another host wakes that host's node at once, by a
 * signal on the host's channel (src/runtime/MachineSupervisor.ts `hostChannel`), not by its slow
 * poll: both nodes are built with the safety net's period infinite, so an operation that ends at
 * all was woken by the signal. On SQLite one data dir is one node, every machine its host's: the
 * accept wakes its own actor, with no poll either.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect } from "effect"
import { AppConfig } from "../../src/kernel/config/AppConfig.js"
import * as Signals from "../../src/kernel/events/Signals.js"
import { Machines } from "../../src/machines/Machines.js"
import { Operations } from "../../src/operations/Operations.js"
import { MachinesRepo } from "../../src/runtime/MachinesRepo.js"
import { testPostgresUrl } from "../support/Postgres.js"
import { newMachine, owner, services, until } from "../support/Services.js"

/** A node whose Signals never poll (only a signal wakes it), counting the execs its driver runs. */
const nodeWithoutPoll = (hostId: string, execs: Map<string, number>, postgresUrl?: string) =>
  Effect.locally(
    services({ hostId, ...(postgresUrl === undefined ? {} : { postgresUrl }) }, (inner) => ({
      ...inner,
      exec: (...args) => {
        execs.set(hostId, (execs.get(hostId) ?? 0) + 1)
        return inner.exec(...args)
      }
    })),
    Signals.pollPeriod,
    Duration.infinity
  )

/** An operation's end as `context` reads it: waits while it is pending or running. */
const endedIn = (context: Context.Context<any>, organizationId: string) => (id: string) =>
  until(
    Effect.map(
      Context.get(context, Operations).find(organizationId, id),
      (op) => op.status === "pending" || op.status === "running" ? undefined : op.status
    )
  )

const onPostgres = testPostgresUrl() !== undefined

describe("machine wakes across nodes", () => {
  // One test per database, registered only on its own (no skipped test in either pass).
  if (!onPostgres) {
    it.scoped(
      "on SQLite the one node is every machine's host: execs accepted there run at once, without any poll",
      () =>
        Effect.gen(function*() {
          const execs = new Map<string, number>()
          const a = yield* nodeWithoutPoll("node-a", execs)
          const alice = yield* owner(a, "alice@example.com")
          const ended = endedIn(a, alice.organizationId)
          const made = yield* Context.get(a, Machines).create(alice, newMachine("near", true))
          assert.strictEqual(yield* ended(made.operation_id), "succeeded")
          const accepted = yield* Effect.forEach(
            [1, 2, 3],
            (i) => Context.get(a, Machines).change(alice, made.machine_id, "exec", { shell: `echo ${i}` })
          )
          for (const exec of accepted) assert.strictEqual(yield* ended(exec.operation_id), "succeeded")
          assert.deepStrictEqual([...execs], [["node-a", 3]])
        }),
      90_000
    )
    return
  }
  it.scoped(
    "execs accepted on one node for another host's machine run on that host's node, without any poll",
    () =>
      Effect.gen(function*() {
        const execs = new Map<string, number>()
        const a = yield* nodeWithoutPoll("node-a", execs)
        const b = yield* nodeWithoutPoll("node-b", execs, Context.get(a, AppConfig).postgresUrl)
        const alice = yield* owner(a, "alice@example.com")
        const ended = endedIn(a, alice.organizationId)

        const made = yield* Context.get(b, Machines).create(alice, newMachine("far", true))
        assert.strictEqual(yield* ended(made.operation_id), "succeeded")
        // Accepted through the node that is not the machine's host, whatever placement chose.
        const host = yield* Context.get(a, MachinesRepo).hostOf(made.machine_id)
        assert.isTrue(host._tag === "Some" && (host.value === "node-a" || host.value === "node-b"))
        const far = host._tag === "Some" ? host.value : ""
        const here = far === "node-a" ? b : a

        const accepted = yield* Effect.forEach([1, 2, 3], (i) =>
          Context.get(here, Machines).change(alice, made.machine_id, "exec", { shell: `echo ${i}` }))
        for (const exec of accepted) {
          assert.strictEqual(yield* ended(exec.operation_id), "succeeded")
        }
        assert.deepStrictEqual([...execs], [[far, 3]])
      }),
    90_000
  )
})
