-- Machines and their operations. The operations table is each machine's durable mailbox: pending
-- rows in acceptance order (`seq`). Event ids are persisted and never reused.

CREATE TABLE machines (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  created_by TEXT NOT NULL,
  name TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('creating', 'stopped', 'starting', 'running', 'stopping', 'restarting',
    'deleting', 'deleted', 'failed')),
  -- The state the machine will have once every accepted operation has run; requests are checked against it.
  projected_state TEXT NOT NULL,
  size TEXT NOT NULL CHECK (size IN ('small', 'default', 'large')),
  image TEXT NOT NULL,
  environment_id TEXT,
  environment_version INTEGER,
  internet_access INTEGER NOT NULL,
  auto_stop_seconds INTEGER,
  idle_sleep_seconds INTEGER,
  setup_script TEXT,
  boot_id TEXT,
  last_stop_reason TEXT,
  source_kind TEXT NOT NULL,
  source_id TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  started_at BIGINT,
  stopped_at BIGINT,
  deleted_at BIGINT,
  -- The last exec, agent turn, terminal or proxied request (idle sleep counts from here).
  last_activity_at BIGINT
);
-- Stop timers and recovery look at running machines only.
CREATE INDEX machines_running ON machines (state) WHERE state = 'running';
CREATE INDEX machines_by_organization ON machines (organization_id, created_at);
-- Names are unique among an organization's live machines.
CREATE UNIQUE INDEX machines_live_name ON machines (organization_id, name) WHERE state <> 'deleted';

CREATE TABLE operations (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  organization_id TEXT NOT NULL,
  machine_id TEXT NOT NULL REFERENCES machines (id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  request TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'uncertain', 'correlation_miss')),
  attempt_count INTEGER NOT NULL DEFAULT 0,
  error_code TEXT,
  completed_but_unchanged INTEGER NOT NULL DEFAULT 0,
  stop_reason TEXT,
  result TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  -- 1 when accepting it will boot the machine (create with start, start, restart): the starts limit counts these.
  boots INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  finished_at BIGINT
);
CREATE INDEX operations_by_machine ON operations (machine_id, seq);
CREATE INDEX operations_boots ON operations (organization_id, created_at) WHERE boots = 1;
CREATE INDEX operations_open ON operations (status, seq) WHERE status IN ('pending', 'running', 'uncertain');

CREATE TABLE idempotency_keys (
  organization_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (organization_id, idempotency_key)
);

CREATE TABLE operation_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  operation_id TEXT NOT NULL,
  name TEXT NOT NULL,
  data TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX operation_events_by_operation ON operation_events (operation_id, id);
