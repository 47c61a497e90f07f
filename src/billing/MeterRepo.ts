/**
 * The meter's SQL (schema/migrations/0022_meter_marks.sql). A machine's meter holds its open run's
 * span: from where it counts (`opened_at`), the fraction carried into it, its price and hour; what a
 * span costs by an instant is Money.meter of its whole seconds to then. An organization's mark keeps
 * what its open spans were charged by its last tick, so a tick reads what they cost by now in one
 * aggregate, leaves the difference to be charged (ChargeRepo) and moves one mark per organization
 * (`tick`); a meter is written only when its run starts or ends, or its hour or payer changes
 * (`settle`).
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Prices } from "../kernel/config/AppConfig.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { Prepared } from "../kernel/sql/Sqlite.js"
import { basisOf, chargesTable, createCharges, permilleFor } from "./ChargeRepo.js"
import {
  basisTable,
  costing,
  goesOn,
  holdsEveryRun,
  hourOf,
  spanColumns,
  spans,
  spansTable,
  tickTable,
  total
} from "./MeterSql.js"
import type { SpanKind, Unsettled } from "./MeterSql.js"

export type { SpanKind, Unsettled } from "./MeterSql.js"
import { hourStart, meterUnit } from "./Money.js"

const make = Effect.gen(function*() {
  const db = yield* Prepared

  /** Drops the marks of these organizations that have no open meter left. */
  const unmarkIdle = (organizationIds: ReadonlyArray<string>) =>
    db.runMany(
      `DELETE FROM billing_meter_marks WHERE organization_id = ?
        AND NOT EXISTS (SELECT 1 FROM billing_meters b WHERE b.is_open = 1 AND b.organization_id = ?)`,
      organizationIds.map((organizationId) => [organizationId, organizationId])
    )

  // The scratch tables, made first in each transaction of a tick or a settle (Prepared.scratch).
  const scratch = Effect.all(
    yield* Effect.forEach([basisTable, spansTable, tickTable, createCharges], db.scratch),
    { discard: true }
  )

  /** Closes (and opens again) a settle's spans of one kind; adds what they cost since their marks to the charges. */
  const settleKind = (kind: SpanKind, settle: {
    readonly tickId: string
    readonly machineId: string | null
    readonly recentSince: number
    readonly prices: ReadonlyArray<number>
  }) =>
    Effect.gen(function*() {
      const span = spans[kind]
      const only = settle.machineId === null ? "" : ` AND ${span.machine} = ?`
      const filled = yield* db.run(
        `INSERT INTO billing_meter_spans (${spanColumns}) SELECT t.tick_id, ${span.columns()},
          ${hourOf("t.metered_at")}, t.price_basis, p.hourly_micros, t.multiplier_permille
          FROM billing_meter_basis t ${span.from} WHERE t.tick_id = ?${only} ${span.where}`,
        ...settle.prices,
        settle.tickId,
        ...(settle.machineId === null ? [] : [settle.machineId]),
        ...(kind === "lost" ? [settle.recentSince] : [])
      )
      if (filled === 0) return
      const cost = `${total("s", "s.seconds")} / ${meterUnit}`
      const charged = `${total("s", "s.charged_seconds")} / ${meterUnit}`
      const added = "s.seconds > s.charged_seconds"
      const sum = (column: string) => `${column} = ${chargesTable}.${column} + excluded.${column}`
      yield* db.run(
        `INSERT INTO ${chargesTable} (organization_id, amount, seconds, machines, machine_id, charged_micros,
          charged_seconds) SELECT s.organization_id, SUM(${cost} - ${charged}), SUM(s.seconds - s.charged_seconds),
          COUNT(CASE WHEN ${added} THEN 1 END), MIN(CASE WHEN ${added} THEN s.machine_id END), SUM(${charged}),
          SUM(s.charged_seconds) FROM billing_meter_spans s WHERE s.tick_id = ? GROUP BY s.organization_id
          ON CONFLICT (organization_id) DO UPDATE SET ${
          ["amount", "seconds", "machines", "charged_micros", "charged_seconds"].map(sum).join(", ")
        }, machine_id = coalesce(${chargesTable}.machine_id, excluded.machine_id)`,
        settle.tickId
      )
      yield* db.run(
        `INSERT INTO billing_usage (machine_id, hour_start, price_basis, organization_id, size, hourly_micros,
          multiplier_permille, seconds, amount_micros) SELECT s.machine_id, s.hour_start, s.price_basis,
          s.organization_id, s.size, s.hourly_micros, s.multiplier_permille, s.seconds, ${cost}
          FROM billing_meter_spans s WHERE s.tick_id = ? AND s.seconds > 0
          ON CONFLICT (machine_id, hour_start, price_basis) DO UPDATE SET seconds = billing_usage.seconds +
          excluded.seconds, amount_micros = billing_usage.amount_micros + excluded.amount_micros`,
        settle.tickId
      )
      // Each meter after its span: open again from its last whole second with the fraction left (from
      // now's hour, for now's payer), or closed there.
      const after = {
        opened_at: "s.opened_at + s.seconds * 1000",
        carry: `${total("s", "s.seconds")} % ${meterUnit}`,
        hour_start: "CASE WHEN s.next_open = 1 THEN s.next_hour_start ELSE s.hour_start END",
        price_basis: "CASE WHEN s.next_open = 1 THEN s.next_basis ELSE s.price_basis END",
        hourly_micros: "CASE WHEN s.next_open = 1 THEN s.next_hourly_micros ELSE s.hourly_micros END",
        multiplier_permille: "CASE WHEN s.next_open = 1 THEN s.next_multiplier_permille ELSE s.multiplier_permille END"
      }
      const sameMeter =
        "b.is_open = s.next_open AND b.organization_id = s.organization_id AND b.machine_id = s.machine_id"
      // A meter that stays open (or closed) keeps its key: updated in place, the usual case.
      yield* db.run(
        `UPDATE billing_meters AS b SET started_at = s.started_at, ${
          Object.entries(after).map(([column, value]) => `${column} = ${value}`).join(", ")
        } FROM billing_meter_spans s WHERE s.tick_id = ? AND ${sameMeter}`,
        settle.tickId
      )
      // One that opens or closes moves in the key; a new one is made.
      yield* db.run(
        `INSERT INTO billing_meters (is_open, organization_id, machine_id, started_at, size, ${
          Object.keys(after).join(", ")
        }) SELECT s.next_open, s.organization_id, s.machine_id, s.started_at, s.size, ${
          Object.values(after).join(", ")
        } FROM billing_meter_spans s WHERE s.tick_id = ? AND NOT EXISTS (SELECT 1 FROM billing_meters b WHERE ${sameMeter})
          ON CONFLICT (machine_id) DO UPDATE SET is_open = excluded.is_open, started_at = excluded.started_at, ${
          Object.keys(after).map((column) => `${column} = excluded.${column}`).join(", ")
        }`,
        settle.tickId
      )
      yield* db.run("DELETE FROM billing_meter_spans WHERE tick_id = ?", settle.tickId)
    })

  /** The open meters of the organizations in `range`, with what they cost by now (bound first). */
  const openRuns = (range: string) =>
    `SELECT b.organization_id, COUNT(*) AS runs, SUM(b.started_at) AS started_sum,
      SUM(${total("b", "(b.now_at - b.opened_at) / 1000")} / ${meterUnit}) AS cost_micros,
      SUM((b.now_at - b.opened_at) / 1000) AS cost_seconds, MIN(b.machine_id) AS machine_id
      FROM (SELECT organization_id, machine_id, started_at, opened_at, carry, hourly_micros, multiplier_permille,
        CAST(? AS BIGINT) AS now_at FROM billing_meters WHERE is_open = 1 AND ${range}) b GROUP BY b.organization_id`

  /** The running machines of the organizations in `range`: how many, and the sum of their starts. */
  const runningMachines = (range: string) =>
    `SELECT organization_id, COUNT(*) AS runs, SUM(started_at) AS started_sum FROM machines
      WHERE state IN ${costing} AND started_at IS NOT NULL AND ${range} GROUP BY organization_id`

  return {
    /**
     * The usual tick of up to `limit` marked organizations after `after` (by id; the last page also
     * takes the unmarked ones after it): each whose open meters go on (see `tickTable`) is left in
     * the charges what they cost by now less what its mark charged (when `metered`), and its mark
     * moves to now; the others are answered, to be settled, with how many machines run and where the
     * next page starts (none: this was the last).
     */
    tick: (after: string, now: number, limit: number, metered: boolean) =>
      Effect.gen(function*() {
        yield* scratch
        const next = Option.getOrNull(
          Option.map(
            yield* db.first<{ organization_id: string }>(
              `SELECT organization_id FROM billing_meter_marks WHERE organization_id > ? ORDER BY organization_id
                LIMIT 1 OFFSET ?`,
              after,
              limit - 1
            ),
            (row) => row.organization_id
          )
        )
        const range = next === null ? "organization_id > ?" : "organization_id > ? AND organization_id <= ?"
        const bounds = next === null ? [after] : [after, next]
        yield* db.run(
          `INSERT INTO billing_meter_tick (organization_id, open_runs, open_started_sum, cost_micros, cost_seconds,
            machine_id) ${openRuns(range)}`,
          now,
          ...bounds
        )
        yield* db.run(
          `INSERT INTO billing_meter_tick (organization_id, running_runs, running_started_sum) ${runningMachines(range)}
            ON CONFLICT (organization_id) DO UPDATE SET running_runs = excluded.running_runs,
            running_started_sum = excluded.running_started_sum`,
          ...bounds
        )
        yield* db.run(
          `UPDATE billing_meter_tick AS t SET goes_on = 1, mark_micros = k.charged_micros,
            mark_seconds = k.charged_seconds
            FROM billing_meter_marks k LEFT JOIN billing_accounts a ON a.organization_id = k.organization_id AND ? = 1
            WHERE k.organization_id = t.organization_id AND ${holdsEveryRun} AND k.hour_start = ?
              AND k.price_basis = ${basisOf("a")} AND (? = 0 OR a.organization_id IS NOT NULL)`,
          metered ? 1 : 0,
          hourStart(now),
          metered ? 1 : 0
        )
        const unsettled = yield* db.all<Unsettled>(
          `SELECT organization_id, open_runs, running_runs, CASE WHEN ${holdsEveryRun} THEN 1 ELSE 0 END
            AS holds_every_run FROM billing_meter_tick t WHERE goes_on = 0`
        )
        const machines = yield* db.first<{ machines: number }>(
          "SELECT coalesce(SUM(running_runs), 0) AS machines FROM billing_meter_tick"
        )
        if (metered) {
          yield* db.run(
            `INSERT INTO ${chargesTable} (organization_id, amount, seconds, machines, machine_id)
              SELECT organization_id, cost_micros - mark_micros, cost_seconds - mark_seconds,
                CASE WHEN cost_seconds > mark_seconds THEN open_runs ELSE 0 END, machine_id
              FROM billing_meter_tick WHERE goes_on = 1`
          )
        }
        yield* db.run(
          `UPDATE billing_meter_marks AS k SET metered_at = ?, charged_micros = t.cost_micros,
            charged_seconds = t.cost_seconds FROM billing_meter_tick t
            WHERE t.goes_on = 1 AND k.organization_id = t.organization_id`,
          now
        )
        yield* db.run("DELETE FROM billing_meter_tick")
        return { next, unsettled, machines: Option.match(machines, { onNone: () => 0, onSome: (row) => row.machines }) }
      }),
    /**
     * The organization of a stopped machine with something to settle: an open meter, or a last run no
     * meter holds (see `spans.lost`); none when its stop was metered already (a stop of a stopped
     * machine) or it runs the run its meter holds.
     */
    toSettle: (machineId: string, recentSince: number) =>
      Effect.map(
        db.first<{ organization_id: string }>(
          `SELECT m.organization_id FROM machines m LEFT JOIN billing_meters b ON b.machine_id = m.id
            WHERE m.id = ? AND m.started_at IS NOT NULL AND (
              (b.is_open = 1 AND NOT (${goesOn}))
              OR (m.state NOT IN ${costing} ${spans.lost.where}))`,
          machineId,
          recentSince
        ),
        Option.map((row) => row.organization_id)
      ),
    /** The organizations with a stopped machine whose last run no meter holds (see `spans.lost`). */
    lost: (recentSince: number) =>
      Effect.map(
        db.all<{ organization_id: string }>(
          `SELECT DISTINCT m.organization_id FROM machines m LEFT JOIN billing_meters b ON b.machine_id = m.id
            WHERE m.state NOT IN ${costing} AND m.started_at IS NOT NULL ${spans.lost.where}`,
          recentSince
        ),
        (rows) => rows.map((row) => row.organization_id)
      ),
    /**
     * Settles these organizations' runs by `now` (only `machineId`'s when given), the `kinds` of span
     * that may be there (see `spans`): every span closed into billing_usage, the running ones opened
     * again with the payer of now (their account's, when `metered`); leaves in the charges what each
     * organization's spans cost since its mark. Whole organizations are marked at now, their open
     * meters charged nothing yet; a stop's spans leave its organization's mark. Those left with no
     * open meter have no mark, so ticks read only organizations that run something.
     */
    settle: (settle: {
      readonly organizationIds: ReadonlyArray<string>
      readonly kinds: ReadonlySet<SpanKind>
      readonly now: number
      readonly recentSince: number
      readonly machineId: string | null
      readonly metered: boolean
      readonly prices: Prices
    }) =>
      Effect.gen(function*() {
        yield* scratch
        const tickId = uuidv7(settle.now)
        yield* db.runMany(
          `INSERT INTO billing_meter_basis (tick_id, organization_id, price_basis, multiplier_permille, metered_at)
            VALUES (?, ?, 'unlimited', 1000, ?)`,
          settle.organizationIds.map((organizationId) => [tickId, organizationId, settle.now])
        )
        if (settle.metered) {
          yield* db.run(
            `UPDATE billing_meter_basis AS t SET price_basis = ${basisOf("a")},
              multiplier_permille = ${permilleFor("a", settle.prices)}
              FROM billing_accounts a WHERE t.tick_id = ? AND a.organization_id = t.organization_id`,
            tickId
          )
        }
        // Every organization is charged, with nothing if no span: its exhaustion is looked at again.
        yield* db.run(
          `INSERT INTO ${chargesTable} (organization_id) SELECT organization_id FROM billing_meter_basis
            WHERE tick_id = ?`,
          tickId
        )
        const { hourly_micros: hourly } = settle.prices
        const prices = [hourly.small, hourly.default, hourly.large]
        // In this order: a restarted machine's old run closes before its new one opens.
        for (const kind of ["open", "started", "lost"] as const) {
          if (settle.kinds.has(kind)) yield* settleKind(kind, { ...settle, tickId, prices })
        }
        if (settle.machineId === null) {
          yield* db.run(
            `INSERT INTO billing_meter_marks (organization_id, metered_at, hour_start, price_basis, charged_micros,
              charged_seconds) SELECT organization_id, ?, ?, price_basis, 0, 0 FROM billing_meter_basis
              WHERE tick_id = ? ON CONFLICT (organization_id) DO UPDATE SET metered_at = excluded.metered_at,
              hour_start = excluded.hour_start, price_basis = excluded.price_basis, charged_micros = 0,
              charged_seconds = 0`,
            settle.now,
            hourStart(settle.now),
            tickId
          )
        } else {
          yield* db.run(
            `UPDATE billing_meter_marks AS k SET charged_micros = k.charged_micros - c.charged_micros,
              charged_seconds = k.charged_seconds - c.charged_seconds
              FROM ${chargesTable} c WHERE c.organization_id = k.organization_id`
          )
        }
        yield* unmarkIdle(settle.organizationIds)
        yield* db.run("DELETE FROM billing_meter_basis WHERE tick_id = ?", tickId)
      })
  }
})

export class MeterRepo extends Context.Tag("svc/billing/MeterRepo")<
  MeterRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(MeterRepo, make)
}
