/**
 * `/metrics`: Effect's metrics of this process and every registered gauge, read at the scrape.
 * The engine's own gauges (machines, operations, mailboxes) are registered here, since the engine
 * is kernel and has no area of its own.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { Gauges } from "../kernel/metrics/Gauges.js"
import { render } from "../kernel/metrics/Prometheus.js"
import { EngineReads } from "../runtime/EngineReads.js"
import { NotReady } from "./Errors.js"

const make = Effect.gen(function*() {
  const gauges = yield* Gauges
  const sql = yield* SqlClient.SqlClient
  const driver = yield* MachineDriver
  const { machines, operations } = yield* EngineReads

  yield* gauges.register({
    name: "svc_machines",
    help: "Machines by state",
    read: Effect.map(
      machines.countsByState,
      (rows) => rows.map((row) => ({ labels: { state: row.state }, value: Number(row.n) }))
    )
  })
  yield* gauges.register({
    name: "svc_operations",
    help: "Operations kept, by kind and status",
    read: Effect.map(
      operations.countsByKindAndStatus,
      (rows) => rows.map((row) => ({ labels: { kind: row.kind, status: row.status }, value: Number(row.n) }))
    )
  })
  const depths = operations.openPerMachine
  yield* gauges.register({
    name: "svc_mailbox_depth_max",
    help: "Open operations of the machine with the most (its actor's mailbox)",
    read: Effect.map(depths, (counts) => [{ labels: {}, value: Math.max(0, ...counts) }])
  })
  yield* gauges.register({
    name: "svc_mailbox_open_operations",
    help: "Open operations over all machines' mailboxes",
    read: Effect.map(depths, (counts) => [{ labels: {}, value: counts.reduce((a, b) => a + b, 0) }])
  })

  /** Whether the database answers now (a stuck or vanished file answers no within 5 s). */
  const databaseAnswers = sql`SELECT 1 AS one`.pipe(
    Effect.timeout("5 seconds"),
    Effect.as(true),
    Effect.catchAllCause(() => Effect.succeed(false))
  )

  return {
    /** `/readyz`: the database answers and machines can run here. */
    readiness: Effect.gen(function*() {
      const missing = [
        ...((yield* databaseAnswers) ? [] : ["the database does not answer"]),
        ...(driver.unavailable === undefined ? [] : ["machines cannot run on this host now"])
      ]
      if (missing.length > 0) return yield* new NotReady({ detail: `Not ready: ${missing.join("; ")}` })
      return { status: "ready" as const, database: "ok" as const, runtime: "ok" as const }
    }),
    /** The exposition text, every gauge read now. */
    scrape: Effect.flatMap(gauges.all, (all) =>
      Effect.map(
        Effect.forEach(all, (gauge) => Effect.map(gauge.read, (readings) => [gauge, readings] as const)),
        render
      ))
  }
})

export class Metrics extends Context.Tag("svc/metrics/Metrics")<Metrics, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Metrics, make)
}
