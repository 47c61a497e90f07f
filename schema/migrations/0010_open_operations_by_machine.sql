-- A machine's open operations in acceptance order, without walking its finished ones: the actor reads
-- its next operation (and the projection its open ones) on every operation, and operations_by_machine
-- made that cost grow with the machine's history.
CREATE INDEX operations_open_by_machine ON operations (machine_id, seq)
  WHERE status IN ('pending', 'running', 'uncertain');
-- It also serves what operations_open did (every open operation, for recovery and housekeeping), so
-- that one goes: one index less to keep on every accept and status change.
DROP INDEX operations_open;
