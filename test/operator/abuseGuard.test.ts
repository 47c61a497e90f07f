/**
 * The abuse guard at the service (no HTTP), on the TestClock: the sampler reads CPU time through a
 * driver wrapper that answers figures the test feeds (the real process driver runs the machines), so
 * the window rule, the stop with `stop_reason` `abuse`, the flag and its resolution are checked to
 * the sample. Scope: `all` watches everyone, `trial` only trial organizations, `off` nobody.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Clock, Context, Effect, TestClock } from "effect"
import type { AbuseGuardSettings, AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import { Machines } from "../../src/machines/Machines.js"
import { AbuseFlags } from "../../src/operator/AbuseFlags.js"
import { MachinesRepo } from "../../src/runtime/MachinesRepo.js"
import { failureTag, newMachine, owner, services, until } from "../support/Services.js"

const sample = 30
const guard = (scope: AbuseGuardSettings["scope"]): Partial<AppConfigShape> => ({
  abuse: { scope, sampleSeconds: sample, cpuPermille: 900, windowSeconds: 3 * sample }
})

/** Services whose driver answers `cpu` for every machine's CPU time and counts the reads. */
const fed = (overrides: Partial<AppConfigShape>) =>
  Effect.gen(function*() {
    const cpu = new Map<string, number>()
    let reads = 0
    const context = yield* services(overrides, (inner) => ({
      ...inner,
      cpuSeconds: (id) =>
        Effect.sync(() => {
          reads++
          return cpu.get(id) ?? 0
        })
    }))
    return { context, cpu, reads: () => reads }
  })

/** A running machine of a new organization. */
const running = (context: Context.Context<any>, email: string) =>
  Effect.gen(function*() {
    const requester = yield* owner(context, email)
    const accepted = yield* Context.get(context, Machines).create(requester, newMachine("m", true))
    const repo = Context.get(context, MachinesRepo)
    yield* until(Effect.map(repo.find(accepted.machine_id), (row) =>
      row._tag === "Some" && row.value.state === "running" ? true : undefined))
    return { requester, id: accepted.machine_id }
  })

/**
 * One sample later: the clock moves `sample` seconds once the sampler sleeps, and this waits (in
 * real time) until that sample has read the CPU figures and gone back to sleep.
 */
const tick = (reads: () => number) =>
  Effect.gen(function*() {
    const before = reads()
    yield* TestClock.adjust(`${sample} seconds`)
    yield* until(Effect.sync(() => (reads() > before ? true : undefined)))
    yield* sampled
  })

/** Completes once the sampler sleeps until the next sample (the one of now has ended). */
const sampled = Effect.gen(function*() {
  const now = yield* Clock.currentTimeMillis
  yield* until(
    Effect.map(
      TestClock.sleeps(),
      (sleeps) => Chunk.some(sleeps, (at) => at === now + sample * 1000) ? true : undefined
    )
  )
})

const stateOf = (context: Context.Context<any>, id: string) =>
  Effect.map(
    Context.get(context, MachinesRepo).find(id),
    (row) => row._tag === "Some" ? `${row.value.projected_state}:${row.value.last_stop_reason ?? ""}` : "gone"
  )

describe("abuse guard", () => {
  it.scoped("stops a machine busy through a whole window, within window + one sample, and flags it; an idle one runs on", () =>
    Effect.gen(function*() {
      const { context, cpu, reads } = yield* fed(guard("all"))
      const busy = yield* running(context, "busy@example.com")
      const idle = yield* running(context, "idle@example.com")
      // The baseline sample (a small machine has one CPU).
      yield* tick(reads)
      const started = yield* Clock.currentTimeMillis
      for (let n = 1; n <= 3; n++) {
        cpu.set(busy.id, (cpu.get(busy.id) ?? 0) + (n === 2 ? 27.5 : 30))
        cpu.set(idle.id, (cpu.get(idle.id) ?? 0) + 3)
        assert.strictEqual(yield* stateOf(context, busy.id), "running:", `sample ${n}`)
        yield* tick(reads)
      }
      const flags = Context.get(context, AbuseFlags)
      const [flag] = yield* until(
        Effect.map(flags.list({ all: false, limit: 10 }), (rows) => rows.length > 0 ? rows : undefined)
      )
      // The flag is written with the stop's acceptance; the machine takes its stop reason as the stop runs.
      yield* until(Effect.map(stateOf(context, busy.id), (state) => state.split(":")[1] === "abuse" ? true : undefined))
      assert.strictEqual(yield* stateOf(context, idle.id), "running:")
      assert.deepInclude(flag, {
        organization_id: busy.requester.organizationId,
        machine_id: busy.id,
        kind: "sustained_cpu",
        action: "stopped",
        min_cpu_permille: 916,
        window_seconds: 90,
        window_start: started,
        resolution: null,
        resolution_note: null,
        resolved_at: null
      })
      const sql = yield* Effect.provide(SqlClient.SqlClient, context as Context.Context<SqlClient.SqlClient>)
      const [stop] = yield* sql<{ kind: string; stop_reason: string; machine_id: string }>`
        SELECT kind, stop_reason, machine_id FROM operations WHERE id = ${flag!.stop_operation_id}`
      assert.deepStrictEqual(stop, { kind: "stop", stop_reason: "abuse", machine_id: busy.id })

      // Resolve: once (with an audit row), then answered as it is.
      const resolved = yield* flags.resolve(flag!.id, { resolution: "confirmed", note: "mining", operator: "ops" })
      assert.strictEqual(resolved.resolution, "confirmed")
      assert.strictEqual(resolved.resolution_note, "mining")
      assert.isNumber(resolved.resolved_at)
      const again = yield* flags.resolve(flag!.id, { resolution: "dismissed", note: "other", operator: "x" })
      assert.deepStrictEqual(again, resolved)
      assert.deepStrictEqual(yield* flags.list({ all: false, limit: 10 }), [])
      assert.strictEqual((yield* flags.list({ all: true, limit: 10 })).length, 1)
      const audit = yield* sql<{ action: string; actor: string; reason: string; organization_id: string }>`
        SELECT action, actor, reason, organization_id FROM audit_log WHERE action LIKE 'abuse_flag.%'`
      assert.deepStrictEqual(audit, [{
        action: "abuse_flag.resolve",
        actor: "ops",
        reason: "mining",
        organization_id: busy.requester.organizationId
      }])
      assert.strictEqual(
        yield* failureTag(
          flags.resolve("0193b8f0-0000-7000-8000-000000000000", { resolution: "confirmed", note: "n", operator: "o" })
        ),
        "resource_not_found"
      )
    }))

  it.scoped("a sample under the threshold starts the window again", () =>
    Effect.gen(function*() {
      const { context, cpu, reads } = yield* fed(guard("all"))
      const busy = yield* running(context, "busy@example.com")
      yield* tick(reads)
      for (const used of [30, 30, 20, 30, 30]) {
        cpu.set(busy.id, (cpu.get(busy.id) ?? 0) + used)
        yield* tick(reads)
        assert.strictEqual(yield* stateOf(context, busy.id), "running:")
      }
      cpu.set(busy.id, (cpu.get(busy.id) ?? 0) + 30)
      yield* tick(reads)
      yield* until(Effect.map(stateOf(context, busy.id), (state) => state.endsWith(":abuse") ? true : undefined))
    }))

  it.scoped("scope trial watches only trial organizations; off watches nobody", () =>
    Effect.gen(function*() {
      for (
        const [overrides, watched] of [
          [{ ...guard("trial"), billing: "unlimited" }, false],
          [{ ...guard("trial"), billing: "metered" }, true],
          [guard("off"), false]
        ] as const
      ) {
        const { context, cpu, reads } = yield* fed(overrides)
        const busy = yield* running(context, "busy@example.com")
        if (!watched) {
          // Samples pass (when the guard is on) without reading the machine's CPU time.
          const before = reads()
          for (let n = 0; n < 5; n++) {
            yield* TestClock.adjust(`${sample} seconds`)
            // The guard samples only when someone can be watched (not off, not trial while unlimited).
            if (overrides.abuse?.scope !== "off" && overrides.billing !== "unlimited") yield* sampled
          }
          assert.strictEqual(reads(), before)
          assert.strictEqual(yield* stateOf(context, busy.id), "running:")
          continue
        }
        yield* tick(reads)
        for (let n = 0; n < 3; n++) {
          cpu.set(busy.id, (cpu.get(busy.id) ?? 0) + 30)
          yield* tick(reads)
        }
        yield* until(Effect.map(stateOf(context, busy.id), (state) => state.endsWith(":abuse") ? true : undefined))
      }
    }))
})
