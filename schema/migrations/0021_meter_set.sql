-- The meter tick in a few set statements per batch of organizations, inside SQLite (src/billing/Repo.ts):
-- what pays for each organization of a batch and at which share of the list price, joined by the
-- batch's statements; its rows live only inside the batch's transaction, keyed by the batch.
CREATE TABLE billing_meter_basis (
  tick_id TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  price_basis TEXT NOT NULL,
  multiplier_permille INTEGER NOT NULL,
  metered_at BIGINT NOT NULL,
  PRIMARY KEY (tick_id, organization_id)
);
-- What the last batch that moved a meter added to it (that batch, seconds, micros): summed per
-- organization for its charge.
ALTER TABLE billing_meters ADD COLUMN tick_id TEXT;
ALTER TABLE billing_meters ADD COLUMN tick_seconds BIGINT NOT NULL DEFAULT 0;
ALTER TABLE billing_meters ADD COLUMN tick_amount BIGINT NOT NULL DEFAULT 0;
-- The machines whose time costs, by organization, with every column a tick reads of them: the tick
-- reads this index alone, not the machines' rows.
CREATE INDEX machines_costing ON machines (organization_id, id, started_at, size)
  WHERE state IN ('running', 'stopping', 'restarting');
-- The other machines that ever ran, with what a tick reads of them: a tick looks among these for the
-- stopped ones with time left, not among every machine.
CREATE INDEX machines_stopped ON machines (organization_id, id, started_at, stopped_at, size)
  WHERE state NOT IN ('running', 'stopping', 'restarting') AND started_at IS NOT NULL;
