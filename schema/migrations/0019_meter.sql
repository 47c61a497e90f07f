-- A machine's meter keeps the usage row of the hour it is metering (its open row: hour, what pays,
-- size, price, seconds and amount so far), so a tick writes one row per machine, in a table of one
-- row per machine. The row moves to billing_usage when the hour, what pays or the size changes.
-- Meters made before this hold no open row (seconds 0): their time is in billing_usage already.
ALTER TABLE billing_meters ADD COLUMN hour_start BIGINT;
ALTER TABLE billing_meters ADD COLUMN price_basis TEXT;
ALTER TABLE billing_meters ADD COLUMN size TEXT;
ALTER TABLE billing_meters ADD COLUMN hourly_micros BIGINT;
ALTER TABLE billing_meters ADD COLUMN multiplier_permille INTEGER;
ALTER TABLE billing_meters ADD COLUMN seconds BIGINT NOT NULL DEFAULT 0;
ALTER TABLE billing_meters ADD COLUMN amount_micros BIGINT NOT NULL DEFAULT 0;
-- By organization alone: an index with a column a tick sets would be rewritten for every machine.
CREATE INDEX billing_meters_by_organization ON billing_meters (organization_id);

-- Usage per machine per hour as readers see it: the closed rows and the meters' open ones.
CREATE VIEW billing_usage_hours AS
  SELECT machine_id, hour_start, price_basis, organization_id, size, hourly_micros, multiplier_permille, seconds,
    amount_micros FROM billing_usage
  UNION ALL
  SELECT machine_id, hour_start, price_basis, organization_id, size, hourly_micros, multiplier_permille, seconds,
    amount_micros FROM billing_meters WHERE seconds > 0;
