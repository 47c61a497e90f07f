-- Housekeeping (src/runtime/Housekeeping.ts) deletes rows by age; these keep its hourly pass cheap.
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
CREATE INDEX port_tokens_by_expiry ON port_tokens (expires_at);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
CREATE INDEX email_sign_ins_by_expiry ON email_sign_ins (expires_at);
