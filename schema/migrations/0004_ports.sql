-- Machine ports (extensions.md §5). A machine's exposed ports are a small setting read with the
-- machine, kept as a JSON array of {port, public} so an operation's outcome can carry the new list
-- in its machine patch (the runtime has no database access; the actor settles the patch).

ALTER TABLE machines ADD COLUMN ports TEXT NOT NULL DEFAULT '[]';

-- Port tokens: bearer tokens for one private port of one machine, made by a member to share that
-- port for a while. Only a SHA-256 of the token is stored.
CREATE TABLE port_tokens (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  machine_id TEXT NOT NULL REFERENCES machines (id) ON DELETE CASCADE,
  port INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
