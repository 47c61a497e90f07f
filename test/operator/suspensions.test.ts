/**
 * Suspensions at the service (no HTTP), over a real SQLite file and the process driver: a boot is
 * refused inside its accept transaction (not only at the door), a suspension committed without its
 * stops (svc died right after the commit) converges at the next start without stopping a boot
 * twice, and suspend and resume each write one audit row, repeats none.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import { Machines } from "../../src/machines/Machines.js"
import { Suspensions } from "../../src/operator/Suspensions.js"
import { MachinesRepo } from "../../src/runtime/MachinesRepo.js"
import { failureTag, newMachine, owner, services, until } from "../support/Services.js"

const action = { operator: "ops", reason: "test" }

const runningMachine = (context: Context.Context<any>, requester: Effect.Effect.Success<ReturnType<typeof owner>>) =>
  Effect.gen(function*() {
    const accepted = yield* Context.get(context, Machines).create(requester, newMachine(`m-${Math.random()}`, true))
    const repo = Context.get(context, MachinesRepo)
    yield* until(
      Effect.map(
        repo.find(accepted.machine_id),
        (row) => Option.isSome(row) && row.value.state === "running" ? true : undefined
      )
    )
    return accepted.machine_id
  })

const sqlOf = (context: Context.Context<any>) =>
  Context.get(context as Context.Context<SqlClient.SqlClient>, SqlClient.SqlClient)

describe("suspensions", () => {
  it.scoped("a suspended organization boots nothing, even past the door; resume lets it boot again", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const machines = Context.get(context, Machines)
      const suspensions = Context.get(context, Suspensions)
      const alice = yield* owner(context, "alice@example.com")
      const stopped = yield* Effect.flatMap(
        machines.create(alice, newMachine("stopped", false)),
        (a) => Effect.succeed(a.machine_id)
      )
      const view = yield* suspensions.suspend(alice.organizationId, action)
      assert.isFalse(view.alreadySuspended)
      assert.strictEqual(view.machinesStopping, 0)
      assert.strictEqual(yield* failureTag(machines.change(alice, stopped, "start", {})), "organization_suspended")
      assert.strictEqual(
        yield* failureTag(machines.create(alice, newMachine("new", true))),
        "organization_suspended"
      )
      assert.isTrue(yield* suspensions.resume(alice.organizationId, action))
      assert.strictEqual(yield* failureTag(machines.change(alice, stopped, "start", {})), "succeeded")
      assert.strictEqual(
        yield* failureTag(suspensions.suspend("0193b8f0-0000-7000-8000-000000000000", action)),
        "resource_not_found"
      )
    }))

  it.scoped("a suspension committed without its stops converges: every machine stopped once", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const suspensions = Context.get(context, Suspensions)
      const repo = Context.get(context, MachinesRepo)
      const sql = sqlOf(context)
      const alice = yield* owner(context, "alice@example.com")
      const ids = [yield* runningMachine(context, alice), yield* runningMachine(context, alice)]
      // What a crash right after the commit leaves: the row, no stop.
      yield* sql`INSERT INTO organization_suspensions (organization_id, operator, reason, suspended_at)
        VALUES (${alice.organizationId}, 'ops', 'crashed', 1)`
      yield* suspensions.converge
      yield* suspensions.converge
      for (const id of ids) {
        yield* until(
          Effect.map(repo.find(id), (row) => Option.isSome(row) && row.value.state === "stopped" ? true : undefined)
        )
        const stops = yield* sql<{ stop_reason: string }>`SELECT stop_reason FROM operations
          WHERE machine_id = ${id} AND kind = 'stop'`
        assert.deepStrictEqual(stops, [{ stop_reason: "suspension" }])
      }
      const again = yield* suspensions.suspend(alice.organizationId, { operator: "other", reason: "again" })
      assert.isTrue(again.alreadySuspended)
      assert.strictEqual(again.suspension.reason, "crashed")
      assert.strictEqual(again.machinesStopping, 0)
    }))

  it.scoped("suspend and resume each write one audit row in their transaction; repeats write none", () =>
    Effect.gen(function*() {
      const context = yield* services()
      const suspensions = Context.get(context, Suspensions)
      const alice = yield* owner(context, "alice@example.com")
      yield* suspensions.suspend(alice.organizationId, { operator: "ann", reason: "first" })
      yield* suspensions.suspend(alice.organizationId, { operator: "ann", reason: "repeat" })
      yield* suspensions.resume(alice.organizationId, { operator: "bob", reason: "cleared" })
      assert.isFalse(yield* suspensions.resume(alice.organizationId, { operator: "bob", reason: "repeat" }))
      const rows = yield* sqlOf(context)<{ actor: string; action: string; reason: string; organization_id: string }>`
        SELECT actor, action, reason, organization_id FROM audit_log WHERE action LIKE 'organization.%' ORDER BY at, id`
      assert.deepStrictEqual(rows, [
        { actor: "ann", action: "organization.suspend", reason: "first", organization_id: alice.organizationId },
        { actor: "bob", action: "organization.resume", reason: "cleared", organization_id: alice.organizationId }
      ])
    }))
})
