-- The meter without a row written per machine per tick (src/billing/Meter.ts, MeterRepo.ts): a
-- machine's meter keeps where the metering of its open run stands (from where it counts, the
-- fraction carried, its price and hour), which changes only when the run starts or ends or its hour
-- or payer changes; each organization's mark says up to when its open runs are charged and what
-- they had cost by then. A tick reads what the open runs cost by now in one aggregate and writes one
-- mark per organization. The settles' scratch rows live in TEMP tables (MeterRepo.ts), so the
-- scratch table of 0021 goes.
DROP TABLE billing_meter_basis;

-- The open usage rows of the old meters are charged: they move to billing_usage.
DROP VIEW billing_usage_hours;
INSERT INTO billing_usage (machine_id, hour_start, price_basis, organization_id, size, hourly_micros,
  multiplier_permille, seconds, amount_micros)
  SELECT machine_id, hour_start, price_basis, organization_id, size, hourly_micros, multiplier_permille, seconds,
    amount_micros FROM billing_meters WHERE seconds > 0
  ON CONFLICT (machine_id, hour_start, price_basis) DO UPDATE SET seconds = billing_usage.seconds + excluded.seconds,
    amount_micros = billing_usage.amount_micros + excluded.amount_micros;

-- One meter per machine that ever ran. `is_open`: its run is being metered (the tick reads these, by
-- organization, without an index hop: the key leads with it). `started_at`: the machine's run it
-- meters or metered last; `opened_at`: where its open span starts (closed: where metering ended);
-- `carry`: the fraction of a micro carried into the span, in Money.meterUnit.
CREATE TABLE billing_meters_v2 (
  is_open INTEGER NOT NULL,
  organization_id TEXT NOT NULL,
  machine_id TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  opened_at BIGINT NOT NULL,
  carry BIGINT NOT NULL,
  hour_start BIGINT NOT NULL,
  price_basis TEXT NOT NULL,
  size TEXT NOT NULL,
  hourly_micros BIGINT NOT NULL,
  multiplier_permille INTEGER NOT NULL,
  PRIMARY KEY (is_open, organization_id, machine_id)
) WITHOUT ROWID;
-- A meter open for a running machine, or for a stopped one with a whole second left to meter (its
-- stop's metering was lost): the next settle closes it at the stop. Prices of meters too old to
-- hold one are the list prices.
INSERT INTO billing_meters_v2 SELECT
  CASE WHEN m.state IN ('running', 'stopping', 'restarting')
    OR m.stopped_at - CASE WHEN b.metered_until > m.started_at THEN b.metered_until ELSE m.started_at END >= 1000
    THEN 1 ELSE 0 END,
  b.organization_id, b.machine_id, coalesce(m.started_at, b.metered_until),
  CASE WHEN b.metered_until > coalesce(m.started_at, 0) THEN b.metered_until ELSE m.started_at END,
  b.carry,
  b.metered_until - b.metered_until % 3600000,
  coalesce(b.price_basis, 'unlimited'),
  coalesce(b.size, m.size, 'default'),
  coalesce(b.hourly_micros, CASE coalesce(b.size, m.size) WHEN 'small' THEN 40000 WHEN 'large' THEN 320000
    ELSE 160000 END),
  coalesce(b.multiplier_permille, 1000)
  FROM billing_meters b LEFT JOIN machines m ON m.id = b.machine_id;
DROP TABLE billing_meters;
ALTER TABLE billing_meters_v2 RENAME TO billing_meters;
CREATE UNIQUE INDEX billing_meters_by_machine ON billing_meters (machine_id);

-- Up to when each organization's open runs are charged (`metered_at`), and what they were charged by
-- then (`charged_micros`, `charged_seconds`: a tick charges what they cost by now less these); the hour
-- and payer its open meters were opened with. Organizations without one (as every one after this
-- migration) are settled by the next tick, which opens their meters again and makes it.
CREATE TABLE billing_meter_marks (
  organization_id TEXT PRIMARY KEY,
  metered_at BIGINT NOT NULL,
  hour_start BIGINT NOT NULL,
  price_basis TEXT NOT NULL,
  charged_micros BIGINT NOT NULL,
  charged_seconds BIGINT NOT NULL
) WITHOUT ROWID;

-- Usage per machine per hour as readers see it: the closed rows, and each open run's span up to its
-- organization's mark.
CREATE VIEW billing_usage_hours AS
  SELECT machine_id, hour_start, price_basis, organization_id, size, hourly_micros, multiplier_permille, seconds,
    amount_micros FROM billing_usage
  UNION ALL
  SELECT b.machine_id, b.hour_start, b.price_basis, b.organization_id, b.size, b.hourly_micros, b.multiplier_permille,
    (k.metered_at - b.opened_at) / 1000,
    ((k.metered_at - b.opened_at) / 1000 * b.hourly_micros * b.multiplier_permille + b.carry) / 3600000
    FROM billing_meters b JOIN billing_meter_marks k ON k.organization_id = b.organization_id
    WHERE b.is_open = 1 AND k.metered_at - b.opened_at >= 1000;
