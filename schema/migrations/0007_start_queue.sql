-- The start queue: a boot that finds the host full waits as a pending operation with these set
-- (api.md OperationDto `starting_soon`). Kept in the row so a restart keeps its place and expiry.
ALTER TABLE operations ADD COLUMN queued_at BIGINT;
ALTER TABLE operations ADD COLUMN queue_priority TEXT;
ALTER TABLE operations ADD COLUMN queue_expires_at BIGINT;
-- Never used: cancelling is a status change and an in-memory signal (docs/operations.md).
ALTER TABLE operations DROP COLUMN cancel_requested;
