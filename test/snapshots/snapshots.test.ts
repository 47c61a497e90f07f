/**
 * The snapshots area's rules, at the service (no HTTP), with the `process` driver (a machine's disk
 * is a host folder, so pushes really run into the data dir's store): the per-machine snapshot limit,
 * template names and the per-organization template limit, a pending snapshot is never deleted,
 * bulk deletes report each id, and templates page in creation order within their organization.
 * A snapshot is held `pending` by holding its machine's create in the driver.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect } from "effect"
import type { AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import type { Requester } from "../../src/kernel/sql/Idempotency.js"
import { Machines } from "../../src/machines/Machines.js"
import { Operations } from "../../src/operations/Operations.js"
import { Snapshots } from "../../src/snapshots/Snapshots.js"
import type { SnapshotRow } from "../../src/snapshots/store/SnapshotsRepo.js"
import { failureTag, newMachine, owner, services, until } from "../support/Services.js"

/**
 * The services, with a driver whose machine creates wait while `hold` is set: a snapshot accepted
 * behind such a create stays pending until `release`.
 */
const setup = (overrides: Partial<AppConfigShape> = {}) =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    let holding = false
    const context = yield* services(overrides, (inner) => ({
      ...inner,
      create: (spec) =>
        Effect.suspend(() => holding ? Effect.zipRight(Deferred.await(gate), inner.create(spec)) : inner.create(spec))
    }))
    const machines = Context.get(context, Machines)
    const operations = Context.get(context, Operations)
    const snapshots = Context.get(context, Snapshots)

    const succeeded = (requester: Requester, operationId: string) =>
      until(
        Effect.map(
          operations.find(requester.organizationId, operationId),
          (op) => op.status === "succeeded" ? op : undefined
        )
      )
    /** A created, stopped machine. */
    const machine = (requester: Requester, name: string) =>
      Effect.gen(function*() {
        const made = yield* machines.create(requester, newMachine(name))
        yield* succeeded(requester, made.operation_id)
        return made.machine_id
      })
    /** A machine whose create is held: what is accepted behind it stays pending. */
    const heldMachine = (requester: Requester, name: string) =>
      Effect.map(
        Effect.sync(() => holding = true).pipe(Effect.zipRight(machines.create(requester, newMachine(name)))),
        (made) => made.machine_id
      )
    const release = Effect.zipRight(Effect.sync(() => holding = false), Deferred.succeed(gate, undefined))
    /** The snapshot once settled; it must be ready. */
    const ready = (requester: Requester, id: string) =>
      Effect.gen(function*() {
        const row = yield* until(
          Effect.map(snapshots.get(requester.organizationId, id), (row) => row.status === "pending" ? undefined : row)
        )
        assert.strictEqual(row.status, "ready", JSON.stringify(row))
        return row
      })
    const pushed = (requester: Requester, machineId: string) =>
      Effect.flatMap(snapshots.push(requester, machineId, "warm"), ({ snapshot }) => ready(requester, snapshot.id))
    const saved = (requester: Requester, machineId: string, name: string) =>
      Effect.flatMap(
        snapshots.saveTemplate(requester, machineId, name),
        ({ snapshot }) => ready(requester, snapshot.id)
      )
    return { context, machines, snapshots, machine, heldMachine, release, ready, pushed, saved }
  })

const ids = (rows: ReadonlyArray<SnapshotRow>) => rows.map((row) => row.id)

describe("snapshots", () => {
  it.scoped("a machine holds at most the per-machine limit of snapshots, pending ones included; templates are not counted", () =>
    Effect.gen(function*() {
      const { context, heldMachine, machine, pushed, saved, snapshots } = yield* setup({
        snapshots: { perMachine: 2, templatesPerOrganization: 10 }
      })
      const alice = yield* owner(context, "alice@example.com")
      const id = yield* machine(alice, "m")
      const first = yield* pushed(alice, id)
      const second = yield* snapshots.push(alice, id, "warm") // counted from its accept, settled or not
      assert.strictEqual(second.snapshot.status, "pending")
      assert.strictEqual(yield* failureTag(snapshots.push(alice, id, "warm")), "snapshot_limit_reached")
      assert.strictEqual(yield* failureTag(snapshots.push(alice, id, "cold")), "snapshot_limit_reached")
      // Refused inside the accept: no row, no operation.
      const page = yield* snapshots.page(alice.organizationId, id, { limit: 10, after: null })
      assert.deepStrictEqual(ids(page), [first.id, second.snapshot.id])
      const ops = yield* Context.get(context, Operations).pageForMachine(alice.organizationId, id, 10, null)
      assert.strictEqual(ops.items.filter((op) => op.kind === "snapshot").length, 2)

      // A template of the same machine is not a snapshot.
      yield* saved(alice, id, "base")
      // Deleting one frees its place (the template still takes none).
      yield* snapshots.delete(alice.organizationId, first.id)
      yield* pushed(alice, id)

      // Pending pushes count from their accept: behind a held create, two are accepted and a third is not.
      const held = yield* heldMachine(alice, "held")
      yield* snapshots.push(alice, held, "warm")
      yield* snapshots.push(alice, held, "warm")
      assert.strictEqual(yield* failureTag(snapshots.push(alice, held, "warm")), "snapshot_limit_reached")
    }))

  it.scoped("a template name is taken once per organization; an organization holds at most its template limit", () =>
    Effect.gen(function*() {
      const { context, machine, saved, snapshots } = yield* setup({
        snapshots: { perMachine: 10, templatesPerOrganization: 2 }
      })
      const alice = yield* owner(context, "alice@example.com")
      const bob = yield* owner(context, "bob@example.com")
      const one = yield* machine(alice, "one")
      const two = yield* machine(alice, "two")
      const base = yield* saved(alice, one, "base")
      assert.strictEqual(yield* failureTag(snapshots.saveTemplate(alice, two, "base")), "template_name_taken")
      // Another organization has its own names.
      yield* saved(bob, yield* machine(bob, "bobs"), "base")

      yield* snapshots.saveTemplate(alice, two, "other") // counted from its accept, settled or not
      assert.strictEqual(yield* failureTag(snapshots.saveTemplate(alice, two, "third")), "template_limit_reached")
      const templates = yield* snapshots.templatesPage(alice.organizationId, { limit: 10, after: null })
      assert.deepStrictEqual(templates.map((row) => row.name), ["base", "other"])

      // Deleting a template frees its name and its place.
      yield* snapshots.deleteTemplate(alice.organizationId, "base")
      assert.strictEqual(yield* failureTag(snapshots.get(alice.organizationId, base.id)), "resource_not_found")
      assert.strictEqual(yield* failureTag(snapshots.saveTemplate(alice, two, "base")), "succeeded")
    }))

  it.scoped("a pending snapshot or template is not deleted (snapshot_pending); once ready it is", () =>
    Effect.gen(function*() {
      const { context, heldMachine, ready, release, snapshots } = yield* setup()
      const alice = yield* owner(context, "alice@example.com")
      const id = yield* heldMachine(alice, "held")
      const pending = yield* snapshots.push(alice, id, "warm")
      const template = yield* snapshots.saveTemplate(alice, id, "tpl")
      assert.strictEqual(pending.snapshot.status, "pending")

      assert.strictEqual(
        yield* failureTag(snapshots.delete(alice.organizationId, pending.snapshot.id)),
        "snapshot_pending"
      )
      assert.strictEqual(yield* failureTag(snapshots.deleteTemplate(alice.organizationId, "tpl")), "snapshot_pending")
      assert.deepStrictEqual(yield* snapshots.deleteForMachine(alice.organizationId, id, null), {
        deleted: 0,
        results: [
          { snapshot_id: pending.snapshot.id, result: "pending" },
          { snapshot_id: template.snapshot.id, result: "template" }
        ]
      })
      assert.strictEqual((yield* snapshots.get(alice.organizationId, pending.snapshot.id)).status, "pending")

      yield* release
      yield* ready(alice, pending.snapshot.id)
      yield* ready(alice, template.snapshot.id)
      yield* snapshots.delete(alice.organizationId, pending.snapshot.id)
      yield* snapshots.deleteTemplate(alice.organizationId, "tpl")
      assert.strictEqual(
        yield* failureTag(snapshots.get(alice.organizationId, pending.snapshot.id)),
        "resource_not_found"
      )
      assert.strictEqual(yield* failureTag(snapshots.getTemplate(alice.organizationId, "tpl")), "resource_not_found")
    }))

  it.scoped("a bulk delete reports each id once, in order: deleted, template, pending or not_found", () =>
    Effect.gen(function*() {
      const { context, heldMachine, machine, pushed, saved, snapshots } = yield* setup()
      const alice = yield* owner(context, "alice@example.com")
      const bob = yield* owner(context, "bob@example.com")
      const id = yield* machine(alice, "m")
      const first = yield* pushed(alice, id)
      const second = yield* pushed(alice, id)
      const template = yield* saved(alice, id, "tpl")
      const bobs = yield* pushed(bob, yield* machine(bob, "bobs"))
      const pending = yield* snapshots.push(alice, yield* heldMachine(alice, "held"), "warm")
      const unknown = "0190a0a0-0000-7000-8000-000000000000"

      const answer = yield* snapshots.bulkDelete(alice.organizationId, [
        first.id,
        template.id,
        pending.snapshot.id,
        unknown,
        first.id.toUpperCase(),
        bobs.id
      ])
      assert.deepStrictEqual(answer, {
        deleted: 1,
        results: [
          { snapshot_id: first.id, result: "deleted" },
          { snapshot_id: template.id, result: "template" },
          { snapshot_id: pending.snapshot.id, result: "pending" },
          { snapshot_id: unknown, result: "not_found" },
          { snapshot_id: bobs.id, result: "not_found" }
        ]
      })
      assert.strictEqual(yield* failureTag(snapshots.get(alice.organizationId, first.id)), "resource_not_found")
      for (const kept of [second.id, template.id, pending.snapshot.id]) {
        assert.strictEqual((yield* snapshots.get(alice.organizationId, kept)).id, kept)
      }
      assert.strictEqual((yield* snapshots.get(bob.organizationId, bobs.id)).status, "ready")

      // By machine and source: the API snapshots go, the template stays.
      assert.deepStrictEqual(yield* snapshots.deleteForMachine(alice.organizationId, id, "api"), {
        deleted: 1,
        results: [{ snapshot_id: second.id, result: "deleted" }]
      })
      assert.deepStrictEqual(ids(yield* snapshots.templatesPage(alice.organizationId, { limit: 10, after: null })), [
        template.id
      ])
    }))

  it.scoped("templates page in creation order after a cursor, only the organization's, snapshots left out", () =>
    Effect.gen(function*() {
      const { context, machine, snapshots } = yield* setup()
      const alice = yield* owner(context, "alice@example.com")
      const bob = yield* owner(context, "bob@example.com")
      const id = yield* machine(alice, "m")
      for (const name of ["zeta", "alpha", "mid"]) yield* snapshots.saveTemplate(alice, id, name)
      yield* snapshots.push(alice, id, "warm")
      yield* snapshots.saveTemplate(bob, yield* machine(bob, "bobs"), "bobs-template")

      const first = yield* snapshots.templatesPage(alice.organizationId, { limit: 2, after: null })
      assert.deepStrictEqual(first.map((row) => row.name), ["zeta", "alpha"])
      const rest = yield* snapshots.templatesPage(alice.organizationId, { limit: 2, after: first[1]!.id })
      assert.deepStrictEqual(rest.map((row) => row.name), ["mid"])
      const end = yield* snapshots.templatesPage(alice.organizationId, { limit: 2, after: rest[0]!.id })
      assert.deepStrictEqual(end, [])
      assert.deepStrictEqual(
        (yield* snapshots.templatesPage(bob.organizationId, { limit: 10, after: null })).map((row) => row.name),
        ["bobs-template"]
      )
      // A template is found by name or id only in its organization.
      assert.strictEqual((yield* snapshots.getTemplate(alice.organizationId, "mid")).id, rest[0]!.id)
      assert.strictEqual(yield* failureTag(snapshots.getTemplate(bob.organizationId, "mid")), "resource_not_found")
      assert.strictEqual(
        yield* failureTag(snapshots.getTemplate(bob.organizationId, rest[0]!.id)),
        "resource_not_found"
      )
    }))
})
