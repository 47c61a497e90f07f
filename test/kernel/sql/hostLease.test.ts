/**
 * The host's lease (src/kernel/sql/HostLease.ts) over svc's services: taken at start with a new
 * epoch, renewed on the Clock, lost to a takeover. On SQLite and, in the PostgreSQL pass, on
 * PostgreSQL, where a transaction fenced with the old epoch fails before it writes.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Exit, TestClock } from "effect"
import { GroupCommit } from "../../../src/kernel/sql/GroupCommit.js"
import { HostLease, leaseSeconds } from "../../../src/kernel/sql/HostLease.js"
import { HostsRepo } from "../../../src/kernel/sql/HostsRepo.js"
import { Machines } from "../../../src/machines/Machines.js"
import { MachinesRepo } from "../../../src/runtime/MachinesRepo.js"
import { newMachine, owner, services } from "../../support/Services.js"

const claim = (hostId: string) => ({
  host_id: hostId,
  internal_url: "http://127.0.0.1:1",
  capacity: null,
  version: "test",
  node_pid: 1,
  started_at: 0
})

describe("host lease", () => {
  it.scoped("taken at start and renewed on the wall clock, not svc's; machines are created on the node's host", () =>
    Effect.gen(function*() {
      const before = Date.now()
      const context = yield* services({ hostId: "host-a" })
      const lease = Context.get(context, HostLease)
      const hosts = Context.get(context, HostsRepo)
      assert.strictEqual(lease.hostId, "host-a")
      const taken = yield* hosts.find("host-a")
      assert.strictEqual(taken._tag === "Some" && taken.value.epoch, lease.epoch)
      const expires = taken._tag === "Some" ? taken.value.lease_expires_at : 0
      assert.isTrue(expires >= before + leaseSeconds * 1000 && expires <= Date.now() + leaseSeconds * 1000)
      // svc's clock a week ahead moves no lease (a TestClock jump is not 120,960 renewals).
      yield* TestClock.adjust("7 days")
      const unmoved = yield* hosts.find("host-a")
      assert.isTrue(unmoved._tag === "Some" && unmoved.value.lease_expires_at < before + 7 * 86_400_000)
      const renewedAt = Date.now()
      yield* lease.renew
      const renewed = yield* hosts.find("host-a")
      assert.isTrue(renewed._tag === "Some" && renewed.value.lease_expires_at >= renewedAt + leaseSeconds * 1000)
      const requester = yield* owner(context, "lease@example.com")
      const made = yield* Context.get(context, Machines).create(requester, newMachine("on-a"))
      const row = yield* Context.get(context, MachinesRepo).find(made.machine_id)
      assert.strictEqual(row._tag === "Some" && row.value.host_id, "host-a")
    }))

  it.scoped("a takeover bumps the epoch; the old holder's renewal loses the lease and its fenced writes fail", () =>
    Effect.gen(function*() {
      const context = yield* services({ hostId: "host-b" })
      const lease = Context.get(context, HostLease)
      const hosts = Context.get(context, HostsRepo)
      const commit = Context.get(context, GroupCommit)
      const sql = Context.get(context, SqlClient.SqlClient)
      const onPostgres = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
      // Before: a fenced transaction writes.
      yield* commit.transaction(Effect.zipRight(lease.fence, hosts.renew("host-b", lease.epoch, 1)))

      const epoch = yield* hosts.take(claim("host-b"), 60_000)
      assert.strictEqual(epoch, lease.epoch + 1)
      const fenced = yield* Effect.exit(
        commit.transaction(Effect.zipRight(lease.fence, hosts.renew("host-b", epoch, 1)))
      )
      if (onPostgres) {
        // The fence found no row at the old epoch: nothing was written, the lease is lost.
        assert.isTrue(Exit.isFailure(fenced) && String(Cause.squash(fenced.cause)).includes("host-b"))
        const row = yield* hosts.find("host-b")
        assert.strictEqual(row._tag === "Some" && row.value.lease_expires_at, 60_000)
        assert.isTrue(yield* Deferred.isDone(lease.lost))
      } else {
        // SQLite: one node per data dir (its lock), so nothing is asked; the renewal finds out.
        assert.isTrue(Exit.isSuccess(fenced))
      }
      yield* lease.renew
      assert.isTrue(yield* Deferred.isDone(lease.lost))
      const lost = yield* Deferred.await(lease.lost)
      assert.include(lost.message, "host-b")
      // Lost is final: every later fenced transaction fails, on both databases.
      const after = yield* Effect.exit(commit.transaction(Effect.zipRight(lease.fence, Effect.void)))
      assert.isTrue(Exit.isFailure(after))
    }))

  it.scoped("adoption at start: rows without a host on both databases; on SQLite every machine, whatever host it had", () =>
    Effect.gen(function*() {
      const context = yield* services({ hostId: "host-c" })
      const sql = Context.get(context, SqlClient.SqlClient)
      const onPostgres = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
      const repo = Context.get(context, MachinesRepo)
      const requester = yield* owner(context, "adopt@example.com")
      const made = yield* Context.get(context, Machines).create(requester, newMachine("renamed-host", false))
      // The data dir's host was renamed (a new hostname, a container recreated): a node starts as host-d.
      assert.strictEqual(yield* repo.adopt("host-d"), onPostgres ? 0 : 1)
      const row = yield* repo.find(made.machine_id)
      assert.strictEqual(row._tag === "Some" && row.value.host_id, onPostgres ? "host-c" : "host-d")
    }))
})
