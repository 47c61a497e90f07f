/** The one table of what each operation needs and leaves, and the projection built on it. */
import { assert, describe, it } from "@effect/vitest"
import { conflictDetail, conflictOf, projectedAfter } from "../../../src/kernel/domain/MachineStates.js"
import { project } from "../../../src/runtime/Projection.js"

describe("machine state rules", () => {
  it("exec, files and ssh keys need a running machine", () => {
    for (const kind of ["exec", "write_file", "read_file", "install_ssh_key"] as const) {
      assert.strictEqual(conflictOf(kind, "running"), undefined)
      assert.strictEqual(conflictOf(kind, "starting"), undefined, "starting settles as running")
      assert.strictEqual(conflictOf(kind, "stopped"), "machine_not_running")
      assert.strictEqual(conflictOf(kind, "creating"), "machine_not_created")
      assert.strictEqual(conflictOf(kind, "deleted"), "machine_deleted")
      assert.strictEqual(conflictOf(kind, "deleting"), "machine_deleted")
      assert.strictEqual(conflictOf(kind, "failed"), "machine_not_created")
    }
  })

  it("start and stop are safe to repeat; restart needs a running machine; delete takes a failed one", () => {
    assert.strictEqual(conflictOf("start", "running"), undefined)
    assert.strictEqual(conflictOf("stop", "stopped"), undefined)
    assert.strictEqual(conflictOf("restart", "stopped"), "machine_not_running")
    assert.strictEqual(conflictOf("start", "failed"), "machine_not_created")
    assert.strictEqual(conflictOf("delete", "failed"), undefined)
    assert.strictEqual(conflictOf("delete", "deleted"), "machine_deleted")
    assert.strictEqual(conflictOf("set_internet_access", "stopped"), undefined)
    assert.strictEqual(conflictOf("apply_environment", "running"), undefined)
    assert.strictEqual(conflictOf("expose_port", "stopped"), undefined)
    assert.strictEqual(conflictOf("unexpose_port", "running"), undefined)
    assert.strictEqual(conflictOf("expose_port", "deleted"), "machine_deleted")
    assert.strictEqual(projectedAfter("expose_port", "stopped"), "stopped")
  })

  it("what each kind leaves", () => {
    assert.strictEqual(projectedAfter("start", "stopped"), "running")
    assert.strictEqual(projectedAfter("stop", "running"), "stopped")
    assert.strictEqual(projectedAfter("delete", "running"), "deleted")
    assert.strictEqual(projectedAfter("exec", "running"), "running")
    assert.strictEqual(projectedAfter("restart", "running"), "running")
  })

  it("the projection runs the open operations over the real state, in order", () => {
    const op = (kind: Parameters<typeof project>[1][number]["kind"], request: unknown = {}) => ({
      kind,
      request: JSON.stringify(request)
    })
    assert.strictEqual(project("creating", [op("create", { start: false })]), "stopped")
    assert.strictEqual(project("creating", [op("create", { start: true }), op("exec")]), "running")
    assert.strictEqual(project("running", [op("stop"), op("start"), op("exec")]), "running")
    assert.strictEqual(project("running", [op("exec"), op("delete")]), "deleted")
    assert.strictEqual(project("stopped", []), "stopped")
  })
})

describe("conflict sentences", () => {
  it("each code says what the kind needs, the state now and the state it will be in", () => {
    assert.strictEqual(
      conflictDetail("exec", "machine_not_running", "stopped"),
      "Exec needs a running machine; the machine is stopped. Start it first."
    )
    assert.strictEqual(
      conflictDetail("exec", "machine_not_running", "running", "stopped"),
      "Exec needs a running machine; the machine is running and will be stopped once its accepted operations have run."
    )
    assert.strictEqual(
      conflictDetail("snapshot", "machine_not_stopped", "running"),
      "Snapshot needs a stopped machine; the machine is running. Stop it first."
    )
    assert.strictEqual(
      conflictDetail("start", "machine_deleted", "stopped", "deleted"),
      "The machine is stopped and will be deleted once its accepted operations have run (a delete was accepted); " +
        "start needs a machine that is not deleted."
    )
    assert.strictEqual(
      conflictDetail("write_file", "machine_deleted", "deleted"),
      "The machine was deleted; write file needs a machine that is not deleted."
    )
    assert.include(conflictDetail("exec", "machine_not_created", "creating", "running"), "still being created")
    assert.include(conflictDetail("exec", "machine_not_created", "failed"), "create failed")
    // Starting and restarting settle as running: no "will be running" when it is starting.
    assert.notInclude(conflictDetail("snapshot", "machine_not_stopped", "starting", "running"), "will be")
  })
})
