/**
 * The environments area's rules, at the service (no HTTP): values are sealed at rest and only names
 * are kept in the clear, every change is a new version while older versions still open, deleting
 * an environment a live machine uses is refused, and upgrade moves each machine on an older version
 * to the current one with an operation that a repeat replays. Over a temporary SQLite file with the
 * `process` driver.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Option, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import { Environments } from "../../src/environments/Environments.js"
import { AppConfig } from "../../src/kernel/config/AppConfig.js"
import { Machines, type NewMachine } from "../../src/machines/Machines.js"
import { Operations } from "../../src/operations/Operations.js"
import { MachineEnvironments } from "../../src/runtime/MachineEnvironments.js"
import { failureTag, owner, services, until } from "../support/Services.js"

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

const settings = (name: string, environmentId: string | null): NewMachine => ({
  name,
  size: "small",
  image: "default",
  environment_id: environmentId,
  internet_access: false,
  auto_stop_seconds: null,
  idle_sleep_seconds: null,
  setup_script: null,
  template: null,
  start: false
})

/** Waits (real time: the actors run on the host) until the operation has succeeded. */
const succeeded = (context: Context.Context<Operations>, organizationId: string, operationId: string) =>
  until(
    Effect.map(
      Context.get(context, Operations).find(organizationId, operationId),
      (op) => op.status === "succeeded" ? op : undefined
    )
  )

describe("environments", () => {
  it.scoped("values are sealed at rest: the rows hold names only, the engine opens the values", () =>
    Effect.gen(function*() {
      const context = yield* services({ secretKeys })
      const environments = Context.get(context, Environments)
      const sql = Context.get(context, SqlClient.SqlClient)
      const alice = yield* owner(context, "alice@example.com")
      const made = yield* environments.create(alice.organizationId, {
        name: "prod",
        variables: { TOKEN: "tok-secret-value-1", API_URL: "https://api.example" }
      })
      assert.strictEqual(made.version, 1)
      assert.deepStrictEqual(JSON.parse(made.variable_names), ["API_URL", "TOKEN"])
      assert.notInclude(JSON.stringify(made), "tok-secret-value-1")

      const row = (yield* sql`SELECT * FROM environments WHERE id = ${made.id}`)[0]!
      assert.notInclude(JSON.stringify(row), "tok-secret-value-1")
      const versions = yield* sql<{ version: number; sealed_variables: string }>`
        SELECT version, sealed_variables FROM environment_versions WHERE environment_id = ${made.id}`
      assert.strictEqual(versions.length, 1)
      assert.match(versions[0]!.sealed_variables, /^v1\.[0-9a-f]{12}\./)
      assert.notInclude(versions[0]!.sealed_variables, "tok-secret-value-1")
      assert.notInclude(versions[0]!.sealed_variables, "api.example")
      // Nowhere in the database file either (the write-ahead log is checkpointed into it at close,
      // so read both).
      const { databaseFile } = Context.get(context, AppConfig)
      const onDisk = [databaseFile, `${databaseFile}-wal`]
        .filter((file) => NodeFs.existsSync(file))
        .map((file) => NodeFs.readFileSync(file).toString("latin1"))
        .join("")
      assert.notInclude(onDisk, "tok-secret-value-1")

      const variables = yield* Context.get(context, MachineEnvironments).variables(made.id, 1)
      assert.deepStrictEqual(variables, { TOKEN: "tok-secret-value-1", API_URL: "https://api.example" })
    }))

  it.scoped("without secret keys nothing can be sealed: create answers secrets_unavailable and records nothing", () =>
    Effect.gen(function*() {
      const context = yield* services({ secretKeys: { kind: "none" } })
      const environments = Context.get(context, Environments)
      const alice = yield* owner(context, "alice@example.com")
      assert.strictEqual(
        yield* failureTag(environments.create(alice.organizationId, { name: "prod", variables: { A: "1" } })),
        "secrets_unavailable"
      )
      assert.strictEqual((yield* environments.list(alice.organizationId)).length, 0)
    }))

  it.scoped("an environment holds at most 200 variables, counted after a patch merges; a refused patch changes nothing", () =>
    Effect.gen(function*() {
      const context = yield* services({ secretKeys })
      const environments = Context.get(context, Environments)
      const alice = yield* owner(context, "alice@example.com")
      const full = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`V${i}`, "x"]))
      const made = yield* environments.create(alice.organizationId, { name: "full", variables: full })
      assert.strictEqual(
        yield* failureTag(environments.patch(alice.organizationId, made.id, { variables: { ONE_MORE: "x" } })),
        "invalid_request"
      )
      assert.strictEqual((yield* environments.find(alice.organizationId, made.id)).version, made.version)
      // Replacing one keeps the count.
      const swapped = yield* environments.patch(alice.organizationId, made.id, { variables: { V0: null, NEW: "y" } })
      assert.strictEqual(swapped.version, made.version + 1)
    }))

  it.scoped("a patch merges variables (null removes one) into a new version; older versions still open", () =>
    Effect.gen(function*() {
      const context = yield* services({ secretKeys })
      const environments = Context.get(context, Environments)
      const engine = Context.get(context, MachineEnvironments)
      const alice = yield* owner(context, "alice@example.com")
      const made = yield* environments.create(alice.organizationId, {
        name: "prod",
        variables: { KEEP: "k", DROP: "d", CHANGE: "old" }
      })

      const patched = yield* environments.patch(alice.organizationId, made.id, {
        variables: { DROP: null, CHANGE: "new", ADD: "a" }
      })
      assert.strictEqual(patched.version, 2)
      assert.deepStrictEqual(JSON.parse(patched.variable_names), ["ADD", "CHANGE", "KEEP"])
      assert.deepStrictEqual(yield* engine.variables(made.id, 2), { KEEP: "k", CHANGE: "new", ADD: "a" })
      assert.deepStrictEqual(yield* engine.variables(made.id, 1), { KEEP: "k", DROP: "d", CHANGE: "old" })
      assert.deepStrictEqual(
        yield* engine.current(alice.organizationId, made.id),
        Option.some({ id: made.id, version: 2 })
      )

      // A patch that changes nothing (same values, removing an absent name) makes no version.
      const same = yield* environments.patch(alice.organizationId, made.id, {
        name: "prod",
        variables: { KEEP: "k", NEVER_THERE: null }
      })
      assert.strictEqual(same.version, 2)
      // A rename alone is a change.
      const renamed = yield* environments.patch(alice.organizationId, made.id, { name: "production" })
      assert.strictEqual(renamed.version, 3)
      assert.strictEqual(renamed.name, "production")
      assert.deepStrictEqual(yield* engine.variables(made.id, 3), { KEEP: "k", CHANGE: "new", ADD: "a" })
      const found = yield* environments.find(alice.organizationId, made.id)
      assert.strictEqual(found.version, 3)
      assert.deepStrictEqual(JSON.parse(found.variable_names), ["ADD", "CHANGE", "KEEP"])
    }))

  it.scoped("an environment belongs to its organization: another one neither finds, patches nor deletes it", () =>
    Effect.gen(function*() {
      const context = yield* services({ secretKeys })
      const environments = Context.get(context, Environments)
      const alice = yield* owner(context, "alice@example.com")
      const bob = yield* owner(context, "bob@example.com")
      const made = yield* environments.create(alice.organizationId, { name: "prod", variables: { A: "1" } })
      assert.strictEqual(yield* failureTag(environments.find(bob.organizationId, made.id)), "resource_not_found")
      assert.strictEqual(
        yield* failureTag(environments.patch(bob.organizationId, made.id, { variables: { A: "2" } })),
        "resource_not_found"
      )
      assert.strictEqual(yield* failureTag(environments.remove(bob.organizationId, made.id)), "resource_not_found")
      assert.strictEqual(yield* failureTag(environments.upgrade(bob, made.id)), "resource_not_found")
      assert.strictEqual((yield* environments.list(bob.organizationId)).length, 0)
      assert.strictEqual((yield* environments.find(alice.organizationId, made.id)).version, 1)
    }))

  it.scoped("deleting an environment a live machine uses is refused with environment_in_use; once it is deleted, it goes", () =>
    Effect.gen(function*() {
      const context = yield* services({ secretKeys })
      const environments = Context.get(context, Environments)
      const machines = Context.get(context, Machines)
      const alice = yield* owner(context, "alice@example.com")
      const made = yield* environments.create(alice.organizationId, { name: "prod", variables: { A: "1" } })
      const machine = yield* machines.create(alice, settings("uses-env", made.id))
      yield* succeeded(context, alice.organizationId, machine.operation_id)

      assert.strictEqual(yield* failureTag(environments.remove(alice.organizationId, made.id)), "environment_in_use")
      assert.strictEqual((yield* environments.find(alice.organizationId, made.id)).id, made.id)

      const removed = yield* machines.change(alice, machine.machine_id, "delete", {})
      yield* succeeded(context, alice.organizationId, removed.operation_id)
      yield* environments.remove(alice.organizationId, made.id)
      assert.strictEqual(yield* failureTag(environments.find(alice.organizationId, made.id)), "resource_not_found")
      assert.strictEqual((yield* environments.list(alice.organizationId)).length, 0)
      // A deleted environment cannot be given to a new machine.
      assert.strictEqual(
        yield* failureTag(machines.create(alice, settings("late", made.id))),
        "resource_not_found"
      )
    }))

  it.scoped("upgrade moves each machine on an older version to the current one; a repeat replays its operations", () =>
    Effect.gen(function*() {
      const context = yield* services({ secretKeys })
      const environments = Context.get(context, Environments)
      const machines = Context.get(context, Machines)
      const alice = yield* owner(context, "alice@example.com")
      const made = yield* environments.create(alice.organizationId, { name: "prod", variables: { A: "1" } })
      const old = yield* machines.create(alice, settings("on-v1", made.id))
      yield* succeeded(context, alice.organizationId, old.operation_id)
      assert.strictEqual((yield* machines.find(alice.organizationId, old.machine_id)).environment_version, 1)

      yield* environments.patch(alice.organizationId, made.id, { variables: { A: "2" } })
      // A machine made after the patch starts on version 2: upgrade leaves it alone.
      const fresh = yield* machines.create(alice, settings("on-v2", made.id))
      yield* succeeded(context, alice.organizationId, fresh.operation_id)
      assert.strictEqual((yield* machines.find(alice.organizationId, fresh.machine_id)).environment_version, 2)
      // Still on version 1 until the upgrade.
      assert.strictEqual((yield* machines.find(alice.organizationId, old.machine_id)).environment_version, 1)

      const upgraded = yield* environments.upgrade(alice, made.id)
      assert.strictEqual(upgraded.operations.length, 1)
      assert.strictEqual(upgraded.operations[0]!.machine_id, old.machine_id)
      assert.strictEqual(upgraded.operations[0]!.requested_action, "apply_environment")
      yield* succeeded(context, alice.organizationId, upgraded.operations[0]!.operation_id)
      assert.strictEqual((yield* machines.find(alice.organizationId, old.machine_id)).environment_version, 2)

      // The repeat, after the machine already reached version 2, answers the same operation.
      const again = yield* environments.upgrade(alice, made.id)
      assert.deepStrictEqual(again.operations, upgraded.operations)

      // A new version makes new operations, for both machines.
      yield* environments.patch(alice.organizationId, made.id, { variables: { A: "3" } })
      const third = yield* environments.upgrade(alice, made.id)
      assert.deepStrictEqual(
        third.operations.map((op) => op.machine_id).sort(),
        [old.machine_id, fresh.machine_id].sort()
      )
      assert.notInclude(third.operations.map((op) => op.operation_id), upgraded.operations[0]!.operation_id)
    }))
})
