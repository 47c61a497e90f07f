/**
 * Work accepted on one node for a machine of another host wakes that host's node at once, by a
 * signal on the host's channel (src/runtime/MachineSupervisor.ts `hostChannel`), not by its slow
 * poll: both nodes are built with the safety net's period infinite, so an operation that ends at
 * all was woken by the signal. PostgreSQL pass only (on SQLite one data dir is one node).
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

describe("machine wakes across nodes", () => {
  it.scoped.skipIf(testPostgresUrl() === undefined)(
    "execs accepted on one node for another host's machine run on that host's node, without any poll",
    () =>
      Effect.gen(function*() {
        const execs = new Map<string, number>()
        const a = yield* nodeWithoutPoll("node-a", execs)
        const b = yield* nodeWithoutPoll("node-b", execs, Context.get(a, AppConfig).postgresUrl)
        const alice = yield* owner(a, "alice@example.com")
        const statusOf = (id: string) =>
          Effect.map(Context.get(a, Operations).find(alice.organizationId, id), (op) => op.status)
        const ended = (id: string) =>
          until(Effect.map(statusOf(id), (status) => status === "pending" || status === "running" ? undefined : status))

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
