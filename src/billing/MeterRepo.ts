/**
 * The meter's SQL (schema/migrations/0022_meter_marks.sql). A machine's meter holds its open run's
 * span: from where it counts (`opened_at`), the fraction carried into it, its price and hour; what a
 * span costs by an instant is Money.meter of its whole seconds to then. An organization's mark keeps
 * what its open spans were charged by its last tick, so a tick reads what they cost by now in one
 * aggregate (`page`), charges the difference and moves one mark per organization (`charged`); a
 * meter is written only when its run starts or ends, or its hour or payer changes (`settle`).
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Prices } from "../kernel/config/AppConfig.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { Prepared } from "../kernel/sql/Sqlite.js"
import { meterUnit } from "./Money.js"
import { type MeteredAccount, meteredAccountColumns } from "./Repo.js"

/** What pays for an organization's usage in a settle, and at which share of the list price. */
export interface MeterBasis {
  readonly organization_id: string
  readonly price_basis: string
  readonly multiplier_permille: number
}

/** What a settle's spans of an organization cost since its mark, and what the mark had charged of them. */
export interface MeterSum {
  readonly organization_id: string
  readonly amount: number
  readonly seconds: number
  /** How many of its runs had a whole second, and one of them. */
  readonly machines: number
  readonly machine_id: string | null
  readonly charged_micros: number
  readonly charged_seconds: number
}

/** Up to when an organization's open runs are charged, and what they were charged by then. */
export interface Mark {
  readonly organization_id: string
  readonly metered_at: number
  readonly hour_start: number
  readonly price_basis: string
  readonly charged_micros: number
  readonly charged_seconds: number
}

/** A mark with its organization's account as a tick reads it (`account_id` null: it has none). */
export type MarkWithAccount = Mark & MeteredAccount & { readonly account_id: string | null }

/** An organization's open runs: how many, the sum of their starts, and what they cost by now. */
export interface OpenRuns {
  readonly organization_id: string
  readonly runs: number
  readonly started_sum: number
  readonly cost_micros: number
  readonly cost_seconds: number
  readonly machine_id: string
}

/** An organization's running machines: how many, and the sum of their starts. */
export interface RunningMachines {
  readonly organization_id: string
  readonly runs: number
  readonly started_sum: number
}

const costing = "('running', 'stopping', 'restarting')"

/** The greater of two non-null values (portable: SQLite's `max` of two, PostgreSQL's `GREATEST`). */
const greatest = (a: string, b: string) => `CASE WHEN ${a} > ${b} THEN ${a} ELSE ${b} END`

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
 * connection alone, in memory (`temp_store`), written to no log.
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

  yield* db.run(basisTable)
  yield* db.run(spansTable)

  /** Closes (and opens again) a settle's spans of one kind; answers what they cost since their marks. */
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
      if (filled === 0) return []
      const cost = `${total("s", "s.seconds")} / ${meterUnit}`
      const charged = `${total("s", "s.charged_seconds")} / ${meterUnit}`
      const added = "s.seconds > s.charged_seconds"
      const sums = yield* db.all<MeterSum>(
        `SELECT s.organization_id, SUM(${cost} - ${charged}) AS amount, SUM(s.seconds - s.charged_seconds) AS seconds,
          COUNT(CASE WHEN ${added} THEN 1 END) AS machines, MIN(CASE WHEN ${added} THEN s.machine_id END) AS machine_id,
          SUM(${charged}) AS charged_micros, SUM(s.charged_seconds) AS charged_seconds
          FROM billing_meter_spans s WHERE s.tick_id = ? GROUP BY s.organization_id`,
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
      return sums
    })

  return {
    /**
     * The open runs of up to `limit` organizations after `after` (by id, those with a mark), each with
     * what they cost from its mark to `now`.
     */
    page: (after: string, limit: number) =>
      db.all<MarkWithAccount>(
        `SELECT k.organization_id, k.metered_at, k.hour_start, k.price_basis, k.charged_micros, k.charged_seconds,
          a.organization_id AS account_id, ${
          meteredAccountColumns.filter((c) => c !== "organization_id").map((c) => `a.${c}`).join(", ")
        }
          FROM billing_meter_marks k LEFT JOIN billing_accounts a ON a.organization_id = k.organization_id
          WHERE k.organization_id > ? ORDER BY k.organization_id LIMIT ?`,
        after,
        limit
      ),
    /**
     * The open runs of the organizations after `after` and up to `upTo` (none: no bound): how many,
     * the sum of their starts, and what they cost by `now`.
     */
    open: (after: string, upTo: string | null, now: number) =>
      db.all<OpenRuns>(
        `SELECT b.organization_id, COUNT(*) AS runs, SUM(b.started_at) AS started_sum,
          SUM(${total("b", "(b.now_at - b.opened_at) / 1000")} / ${meterUnit}) AS cost_micros,
          SUM((b.now_at - b.opened_at) / 1000) AS cost_seconds, MIN(b.machine_id) AS machine_id
          FROM (SELECT organization_id, machine_id, started_at, opened_at, carry, hourly_micros, multiplier_permille,
            CAST(? AS BIGINT) AS now_at FROM billing_meters WHERE is_open = 1 AND organization_id > ?${
          upTo === null ? "" : " AND organization_id <= ?"
        }) b GROUP BY b.organization_id`,
        ...(upTo === null ? [now, after] : [now, after, upTo])
      ),
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
    /** The running machines of the organizations after `after` and up to `upTo` (none: no bound). */
    running: (after: string, upTo: string | null) =>
      db.all<RunningMachines>(
        `SELECT organization_id, COUNT(*) AS runs, SUM(started_at) AS started_sum FROM machines
          WHERE state IN ${costing} AND started_at IS NOT NULL AND organization_id > ?${
          upTo === null ? "" : " AND organization_id <= ?"
        } GROUP BY organization_id`,
        ...(upTo === null ? [after] : [after, upTo])
      ),
    /** Moves organizations' marks to `now`, with what their open runs cost by then. */
    charged: (rows: ReadonlyArray<Pick<OpenRuns, "organization_id" | "cost_micros" | "cost_seconds">>, now: number) =>
      db.runMany(
        `UPDATE billing_meter_marks SET metered_at = ?, charged_micros = ?, charged_seconds = ?
          WHERE organization_id = ?`,
        rows.map((row) => [now, row.cost_micros, row.cost_seconds, row.organization_id])
      ),
    /**
     * Marks settled organizations at `now`, their open meters (all just opened) charged nothing yet;
     * those left with none have no mark, so ticks read only organizations that run something.
     */
    settled: (basis: ReadonlyArray<MeterBasis>, now: number) =>
      Effect.zipRight(
        db.runMany(
          `INSERT INTO billing_meter_marks (organization_id, metered_at, hour_start, price_basis, charged_micros,
          charged_seconds) VALUES (?, ?, ?, ?, 0, 0) ON CONFLICT (organization_id) DO UPDATE SET
          metered_at = excluded.metered_at, hour_start = excluded.hour_start, price_basis = excluded.price_basis,
          charged_micros = 0, charged_seconds = 0`,
          basis.map((row) => [row.organization_id, now, now - (now % 3_600_000), row.price_basis])
        ),
        unmarkIdle(basis.map((row) => row.organization_id))
      ),
    /** Takes what the mark had charged of runs a stop closed off its organization's mark. */
    closed: (sum: MeterSum) =>
      Effect.zipRight(
        db.run(
          `UPDATE billing_meter_marks SET charged_micros = charged_micros - ?, charged_seconds = charged_seconds - ?
          WHERE organization_id = ?`,
          sum.charged_micros,
          sum.charged_seconds,
          sum.organization_id
        ),
        unmarkIdle([sum.organization_id])
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
     * again with the payer of `basis`; answers what each organization's spans cost since its mark.
     * The caller moves the marks of whole organizations.
     */
    settle: (settle: {
      readonly kinds: ReadonlySet<SpanKind>
      readonly now: number
      readonly recentSince: number
      readonly machineId: string | null
      readonly basis: ReadonlyArray<MeterBasis>
      readonly hourly: Prices["hourly_micros"]
    }) =>
      Effect.gen(function*() {
        const tickId = uuidv7(settle.now)
        yield* db.runMany(
          `INSERT INTO billing_meter_basis (tick_id, organization_id, price_basis, multiplier_permille, metered_at)
            VALUES (?, ?, ?, ?, ?)`,
          settle.basis.map((row) => [
            tickId,
            row.organization_id,
            row.price_basis,
            row.multiplier_permille,
            settle.now
          ])
        )
        const prices = [settle.hourly.small, settle.hourly.default, settle.hourly.large]
        const sums: Array<MeterSum> = []
        // In this order: a restarted machine's old run closes before its new one opens.
        for (const kind of ["open", "started", "lost"] as const) {
          if (settle.kinds.has(kind)) sums.push(...(yield* settleKind(kind, { ...settle, tickId, prices })))
        }
        yield* db.run("DELETE FROM billing_meter_basis WHERE tick_id = ?", tickId)
        return sums
      })
  }
})

export class MeterRepo extends Context.Tag("svc/persistence/MeterRepo")<
  MeterRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(MeterRepo, make)
}
