/**
 * A deleted organization's data is kept for the retention, then deleted: its machines with their
 * disks, their snapshots and the organization's templates, and the organization is marked purged.
 * On the TestClock with a one-day retention (SVC_DELETED_ORG_RETENTION_DAYS).
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, TestClock } from "effect"
import { Machines } from "../../src/machines/Machines.js"
import { Operations } from "../../src/operations/Operations.js"
import { OrganizationDeletion } from "../../src/organizations/Deletion.js"
import { Snapshots } from "../../src/snapshots/Snapshots.js"
import { newMachine, owner, services, until } from "../support/Services.js"

const start = Date.parse("2026-11-22T12:00:00Z")

describe("retention of deleted organizations", () => {
  it.scoped(
    "machines, disks, snapshots and templates go once the retention ends, not before",
    () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(start)
        const context = yield* services({ deletedOrganizationRetentionDays: 1 })
        const machines = Context.get(context, Machines)
        const operations = Context.get(context, Operations)
        const snapshots = Context.get(context, Snapshots)
        const sql = Context.get(context, SqlClient.SqlClient)
        const requester = yield* owner(context, "owner@example.com")
        const org = requester.organizationId
        const settled = (operationId: string) =>
          until(Effect.map(operations.find(org, operationId), (op) => op.status === "succeeded" ? op : undefined))
        const made = yield* machines.create(requester, newMachine("kept"))
        yield* settled(made.operation_id)
        const readySnapshot = (id: string) =>
          until(Effect.map(snapshots.get(org, id), (row) => (row.status === "ready" ? row : undefined)))
        yield* readySnapshot((yield* snapshots.push(requester, made.machine_id, "warm")).snapshot.id)
        yield* readySnapshot((yield* snapshots.saveTemplate(requester, made.machine_id, "base")).snapshot.id)
        const disk = yield* Effect.map(
          sql<{ n: number }>`SELECT COUNT(*) AS n FROM snapshots WHERE organization_id = ${org}`,
          (rows) => Number(rows[0]!.n)
        )
        assert.strictEqual(disk, 2)

        yield* Context.get(context, OrganizationDeletion).delete(
          { organizationId: org, userId: requester.userId, role: "owner" },
          start
        )
        const state = Effect.map(machines.find(org, made.machine_id), (machine) => machine.state)
        yield* TestClock.adjust("23 hours")
        assert.notStrictEqual(yield* state, "deleted")
        yield* TestClock.adjust("2 hours")
        yield* until(Effect.map(state, (s) => (s === "deleted" ? s : undefined)), 20_000)
        const left = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM snapshots WHERE organization_id = ${org}`
        assert.strictEqual(Number(left[0]!.n), 0)
        // The next pass finds nothing left and marks the organization purged.
        yield* TestClock.adjust("1 hours")
        const purged = yield* until(
          Effect.map(
            sql<{ purged_at: number | null }>`SELECT purged_at FROM organizations WHERE id = ${org}`,
            (rows) => rows[0]!.purged_at ?? undefined
          )
        )
        assert.isAbove(Number(purged), start)
      }),
    120_000
  )
})
