/**
 * The abuse guard's sample is per host (src/operator/AbuseGuard.ts): each node reads the CPU time of
 * its own host's machines only, whose cgroups are on its host, so two nodes never both judge one
 * machine. In the PostgreSQL pass two nodes on one database; on SQLite one node watches its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { AppConfig } from "../../src/kernel/config/AppConfig.js"
import { Machines } from "../../src/machines/Machines.js"
import { makeAbuseGuard } from "../../src/operator/AbuseGuard.js"
import { MachinesRepo } from "../../src/runtime/MachinesRepo.js"
import { newMachine, owner, services, until } from "../support/Services.js"

/** The node's own guard, watching everyone,. */
const guardOf = (context: Context.Context<any>) =>
  makeAbuseGuard.pipe(
    Effect.provideService(AppConfig, {
      ...Context.get(context, AppConfig),
      abuse: { scope: "all", sampleSeconds: 30, cpuPermille: 900, windowSeconds: 90 }
    }),
    Effect.provide(context)
  )

describe("abuse guard across hosts", () => {
  it.scoped("each node samples only its own host's running machines", () =>
    Effect.gen(function*() {
      const a = yield* services({ hostId: "node-a" })
      const url = Context.get(a, AppConfig).postgresUrl
      const b = url === undefined ? undefined : yield* services({ hostId: "node-b", postgresUrl: url })
      const alice = yield* owner(a, "alice@example.com")
      const made = yield* Context.get(b ?? a, Machines).create(alice, newMachine("busy", true))
      const repo = Context.get(a, MachinesRepo)
      const row = yield* until(Effect.map(repo.find(made.machine_id), (found) =>
        found._tag === "Some" && found.value.state === "running" ? found.value : undefined))
      const holder = row.host_id === "node-b" ? b! : a
      const other = holder === a ? b : a

      assert.strictEqual((yield* (yield* guardOf(holder)).sample).watched, 1)
      if (other !== undefined) {
        assert.strictEqual((yield* (yield* guardOf(other)).sample).watched, 0)
      }
    }), 90_000)
})
