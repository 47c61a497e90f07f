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
import { greatest } from "../kernel/sql/Portable.js"
import { Prepared } from "../kernel/sql/Sqlite.js"
import { basisOf, chargesTable, createCharges, permilleFor } from "./ChargeRepo.js"
import { hourStart, meterUnit } from "./Money.js"

/**
 * An organization a tick leaves to be settled: how many open meters and running machines it has,
 * and whether those meters hold every run (1) or not (0).
 */
export interface Unsettled {
  readonly organization_id: string
  readonly open_runs: number
  readonly running_runs: number
  readonly holds_every_run: number
}

const costing = "('running', 'stopping', 'restarting')"

/** A span's whole seconds from `from` to `to` (none before it starts). */
const wholeSeconds = (from: string, to: string) =>
  `(CASE WHEN ${to} > ${from} THEN (${to} - ${from}) / 1000 ELSE 0 END)`

/** Money.meter in integers: `seconds` at the span's price with its carried fraction, in meter units. */
const total = (s: string, seconds: string) =>
  `(${seconds} * ${s}.hourly_micros * ${s}.multiplier_permille + ${s}.carry)`

const hourOf = (at: string) => `((${at}) - (${at}) % 3600000)`

/** The hourly price of each size, as rows to join (three bound parameters). */
const pricesTable = `(SELECT 'small' AS size, CAST(? AS BIGINT) AS hourly_micros
  UNION ALL SELECT 'default', CAST(? AS BIGINT) UNION ALL SELECT 'large', CAST(? AS BIGINT))`

/**
 * A settle's scratch rows, keyed by the settle, live only inside its transaction: tables of this
 * connection alone (`Prepared.scratch`: on PostgreSQL, of each pooled connection, so settles on
 * several nodes never meet), written to no log.
 * - `billing_meter_basis`: what pays for each organization of the settle, and at which share of the
 *   list price (joined by its statements).
 * - `billing_meter_spans`: the runs it closes (or closes and opens again). `seconds`: the span's whole
 *   seconds; `charged_seconds`: what its mark already charged; `next_*`: the meter after it (open
 *   again, or closed). No key: each row is read once, by a scan of its settle's.
 */
const basisTable = `CREATE TEMP TABLE IF NOT EXISTS billing_meter_basis (
  tick_id TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  price_basis TEXT NOT NULL,
  multiplier_permille INTEGER NOT NULL,
  metered_at BIGINT NOT NULL,
  PRIMARY KEY (tick_id, organization_id)
)`

const spansTable = `CREATE TEMP TABLE IF NOT EXISTS billing_meter_spans (
  tick_id TEXT NOT NULL,
  machine_id TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  opened_at BIGINT NOT NULL,
  carry BIGINT NOT NULL,
  hour_start BIGINT NOT NULL,
  price_basis TEXT NOT NULL,
  size TEXT NOT NULL,
  hourly_micros BIGINT NOT NULL,
  multiplier_permille INTEGER NOT NULL,
  seconds BIGINT NOT NULL,
  charged_seconds BIGINT NOT NULL,
  next_open INTEGER NOT NULL,
  next_hour_start BIGINT NOT NULL,
  next_basis TEXT NOT NULL,
  next_hourly_micros BIGINT NOT NULL,
  next_multiplier_permille INTEGER NOT NULL
)`

/**
 * A tick's page of organizations, emptied in its transaction: its open meters (how many, the sum of
 * their starts, what they cost by now, one of their machines), its running machines (how many, the
 * sum of their starts), whether the meters go on (they hold every run, opened this hour for the
 * payer of now), and what its mark had charged of them.
 */
const tickTable = `CREATE TEMP TABLE IF NOT EXISTS billing_meter_tick (
  organization_id TEXT PRIMARY KEY,
  open_runs INTEGER NOT NULL DEFAULT 0,
  open_started_sum BIGINT,
  cost_micros BIGINT,
  cost_seconds BIGINT,
  machine_id TEXT,
  running_runs INTEGER NOT NULL DEFAULT 0,
  running_started_sum BIGINT,
  goes_on INTEGER NOT NULL DEFAULT 0,
  mark_micros BIGINT,
  mark_seconds BIGINT
)`

/** Whether a tick's open meters of an organization hold every run of its running machines (as many, the same starts). */
const holdsEveryRun = "(t.open_runs = t.running_runs AND t.open_started_sum = t.running_started_sum)"

const spanColumns = `tick_id, machine_id, organization_id, started_at, opened_at, carry, hour_start, price_basis, size,
  hourly_micros, multiplier_permille, seconds, charged_seconds, next_open, next_hour_start, next_basis,
  next_hourly_micros, next_multiplier_permille`

/**
 * The spans a settle closes, three kinds in turn (`t` is the settle's basis row of the organization,
 * `m` the machine, `b` its meter, `k` the organization's mark, `p` its size's price), each as
 * `machine_id` to `next_open` of `spanColumns`:
 * - `open`: every open meter. A running machine's run goes on (closed now, opened again at once,
 *   with the payer of now); a stopped one's closes at its stop; one of an earlier run of a machine
 *   that started again closes where the new run began. Never before the mark: what it charged stays.
 * - `started`: a running machine with no open meter (it started since the last tick, or its meter
 *   was closed), metered from its start or from where its closed meter of the same run ended.
 * - `lost`: a stopped machine whose last run no meter holds (it started and stopped between two
 *   ticks and its stop's metering was lost); one with no meter at all only when it stopped lately,
 *   so runs from before the meter existed are not charged now.
 */
const spans = {
  open: {
    // The batch's organizations drive the join (CROSS JOIN keeps that order in SQLite): not every open meter.
    from: `CROSS JOIN billing_meters b
      LEFT JOIN machines m ON m.id = b.machine_id
      LEFT JOIN billing_meter_marks k ON k.organization_id = b.organization_id
      JOIN ${pricesTable} p ON p.size = b.size`,
    machine: "b.machine_id",
    where: "AND b.is_open = 1 AND b.organization_id = t.organization_id",
    columns: () => {
      const ends = greatest(
        `CASE WHEN ${goesOn} THEN t.metered_at WHEN m.state IN ${costing} THEN m.started_at
          ELSE coalesce(m.stopped_at, k.metered_at, b.opened_at) END`,
        "coalesce(k.metered_at, 0)"
      )
      return `b.machine_id, b.organization_id, b.started_at, b.opened_at, b.carry, b.hour_start, b.price_basis, b.size,
        b.hourly_micros, b.multiplier_permille, ${wholeSeconds("b.opened_at", ends)},
        ${wholeSeconds("b.opened_at", "coalesce(k.metered_at, 0)")}, CASE WHEN ${goesOn} THEN 1 ELSE 0 END`
    }
  },
  started: {
    from:
      `JOIN machines m ON m.organization_id = t.organization_id AND m.state IN ${costing} AND m.started_at IS NOT NULL
      LEFT JOIN billing_meters b ON b.machine_id = m.id
      JOIN ${pricesTable} p ON p.size = m.size`,
    machine: "m.id",
    where: "AND (b.machine_id IS NULL OR b.is_open = 0)",
    columns: () => {
      const from = `CASE WHEN b.started_at = m.started_at THEN ${greatest("b.opened_at", "m.started_at")}
        ELSE m.started_at END`
      return `m.id, m.organization_id, m.started_at, ${from}, coalesce(b.carry, 0), ${hourOf(from)}, t.price_basis,
        m.size, p.hourly_micros, t.multiplier_permille, ${wholeSeconds(from, "t.metered_at")}, 0, 1`
    }
  },
  lost: {
    from:
      `JOIN machines m ON m.organization_id = t.organization_id AND m.state NOT IN ${costing} AND m.started_at IS NOT NULL
      LEFT JOIN billing_meters b ON b.machine_id = m.id
      JOIN ${pricesTable} p ON p.size = m.size`,
    machine: "m.id",
    where: `AND m.stopped_at - m.started_at >= 1000
      AND ((b.machine_id IS NULL AND m.stopped_at >= ?) OR (b.is_open = 0 AND b.started_at <> m.started_at))`,
    columns: () =>
      `m.id, m.organization_id, m.started_at, m.started_at, coalesce(b.carry, 0), ${hourOf("m.started_at")},
        t.price_basis, m.size, p.hourly_micros, t.multiplier_permille, (m.stopped_at - m.started_at) / 1000, 0, 0`
  }
} as const
export type SpanKind = keyof typeof spans

/** An open meter whose machine still runs the same run: it goes on. */
const goesOn = `m.state IN ${costing} AND m.started_at = b.started_at`

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
