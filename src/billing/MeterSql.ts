/**
 * The meter's SQL text (MeterRepo.ts runs it): the scratch tables a tick and a settle fill, the
 * span arithmetic in integers (Money.meter), and the statements of each kind of span.
 */
import { greatest } from "../kernel/sql/Portable.js"

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

export const costing = "('running', 'stopping', 'restarting')"

/** A span's whole seconds from `from` to `to` (none before it starts). */
export const wholeSeconds = (from: string, to: string) =>
  `(CASE WHEN ${to} > ${from} THEN (${to} - ${from}) / 1000 ELSE 0 END)`

/** Money.meter in integers: `seconds` at the span's price with its carried fraction, in meter units. */
export const total = (s: string, seconds: string) =>
  `(${seconds} * ${s}.hourly_micros * ${s}.multiplier_permille + ${s}.carry)`

export const hourOf = (at: string) => `((${at}) - (${at}) % 3600000)`

/** The hourly price of each size, as rows to join (three bound parameters). */
export const pricesTable = `(SELECT 'small' AS size, CAST(? AS BIGINT) AS hourly_micros
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
export const basisTable = `CREATE TEMP TABLE IF NOT EXISTS billing_meter_basis (
  tick_id TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  price_basis TEXT NOT NULL,
  multiplier_permille INTEGER NOT NULL,
  metered_at BIGINT NOT NULL,
  PRIMARY KEY (tick_id, organization_id)
)`

export const spansTable = `CREATE TEMP TABLE IF NOT EXISTS billing_meter_spans (
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
export const tickTable = `CREATE TEMP TABLE IF NOT EXISTS billing_meter_tick (
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
export const holdsEveryRun = "(t.open_runs = t.running_runs AND t.open_started_sum = t.running_started_sum)"

export const spanColumns =
  `tick_id, machine_id, organization_id, started_at, opened_at, carry, hour_start, price_basis, size,
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
export const spans = {
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
export const goesOn = `m.state IN ${costing} AND m.started_at = b.started_at`
