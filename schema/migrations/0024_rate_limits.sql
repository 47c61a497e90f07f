-- The requests the rate limits count (src/kernel/http/RateLimiter.ts): one row per request counted
-- under a key, in the database so that every node on one database counts the same requests.
CREATE TABLE rate_limit_hits (
  limit_key TEXT NOT NULL,
  hit_at INTEGER NOT NULL
);
CREATE INDEX rate_limit_hits_by_key ON rate_limit_hits (limit_key, hit_at);
