-- The host whose snapshot store holds the snapshot's manifest and chunks (the machine's host when
-- it was taken): a restore or a template create on another host copies what it misses from there
-- (docs/scale-out.md "Restores and templates on any host"). NULL on rows from before hosts: they
-- are in the store of the single host that took them.
ALTER TABLE snapshots ADD COLUMN host_id TEXT;
