-- Billing (docs/billing.md): one account per organization with its three balances, the ledger
-- whose rows add up to each balance (a row is written in the transaction of the change it
-- records), the meter of each machine, the usage it recorded, and the payment provider's events
-- applied (each once, by its id).
CREATE TABLE billing_accounts (
  organization_id TEXT PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  trial_micros BIGINT NOT NULL DEFAULT 0,
  plan_micros BIGINT NOT NULL DEFAULT 0,
  credit_micros BIGINT NOT NULL DEFAULT 0,
  trial_total_micros BIGINT NOT NULL DEFAULT 0,
  trial_ends_at BIGINT NOT NULL,
  -- Set once the trial ended (expired or forfeited); an operator grant may restart it.
  trial_ended_at BIGINT,
  -- The first confirmed payment: the trial rules (sizes, machines, hourly cap) stop there.
  paid_at BIGINT,
  minimum_balance_micros BIGINT NOT NULL DEFAULT 0,
  spend_cap_micros BIGINT,
  -- Credit spent on usage in the UTC month `spend_month` (YYYY-MM), for the spend cap.
  spend_month TEXT NOT NULL DEFAULT '',
  credit_spent_micros BIGINT NOT NULL DEFAULT 0,
  exhausted_since BIGINT,
  card_verified_at BIGINT,
  customer_id TEXT,
  plan_tier TEXT,
  subscription_id TEXT,
  plan_renews INTEGER NOT NULL DEFAULT 0,
  plan_cancel_at_period_end INTEGER NOT NULL DEFAULT 0,
  plan_period_start BIGINT,
  plan_period_end BIGINT,
  -- Checkout asked to forfeit the trial once the plan's first payment is confirmed.
  plan_end_trial INTEGER NOT NULL DEFAULT 0,
  refill_enabled INTEGER NOT NULL DEFAULT 0,
  refill_credit_packs INTEGER NOT NULL DEFAULT 1,
  refill_threshold_micros BIGINT NOT NULL DEFAULT 0,
  refill_monthly_cap_micros BIGINT NOT NULL DEFAULT 0,
  refill_month TEXT NOT NULL DEFAULT '',
  refill_charged_micros BIGINT NOT NULL DEFAULT 0,
  refill_failures INTEGER NOT NULL DEFAULT 0,
  refill_disabled_reason TEXT,
  -- The refill under way (its PaymentIntent's id): one at a time.
  refill_pending TEXT,
  -- The last refill, as JSON {id, status, amount_micros, credit_packs, failure_code, created_at}.
  refill_last TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE TABLE billing_ledger (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  organization_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  balance TEXT NOT NULL CHECK (balance IN ('trial', 'plan', 'credit')),
  amount_micros BIGINT NOT NULL,
  balance_after_micros BIGINT NOT NULL,
  description TEXT NOT NULL,
  machine_id TEXT,
  reference TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX billing_ledger_by_organization ON billing_ledger (organization_id, seq);

-- Where each machine's metering stands: metered up to `metered_until`, and the fraction of a micro
-- not yet charged (`carry`, in micros × 3,600,000) so rounding never loses or invents one.
CREATE TABLE billing_meters (
  machine_id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  metered_until BIGINT NOT NULL,
  carry BIGINT NOT NULL DEFAULT 0
);

-- Running time as metered, per machine per UTC hour (by the hour its metered span started) and
-- per what paid for it (`price_basis`: trial, credit, unlimited or the plan): a tick adds to its
-- hour's row, so a machine costs one row an hour, not one a tick.
CREATE TABLE billing_usage (
  machine_id TEXT NOT NULL,
  hour_start BIGINT NOT NULL,
  price_basis TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  size TEXT NOT NULL,
  hourly_micros BIGINT NOT NULL,
  multiplier_permille INTEGER NOT NULL,
  seconds BIGINT NOT NULL,
  amount_micros BIGINT NOT NULL,
  PRIMARY KEY (machine_id, hour_start, price_basis)
);
CREATE INDEX billing_usage_by_organization ON billing_usage (organization_id, hour_start);

-- The payment provider's events, each applied once: a repeat finds its id here.
CREATE TABLE billing_events (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  applied_at BIGINT NOT NULL
);
