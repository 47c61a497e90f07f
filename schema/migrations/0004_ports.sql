-- Machine ports (extensions.md §5). A machine's exposed ports are a small setting read with the
-- machine, kept as a JSON array of {port, public} so an operation's outcome can carry the new list
-- in its machine patch (the runtime has no database access; the actor settles the patch).

ALTER TABLE machines ADD COLUMN ports TEXT NOT NULL DEFAULT '[]';

