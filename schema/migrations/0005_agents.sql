-- Coding agents inside machines: conversations, their turns, their events and the inputs (steer,
-- interrupt) sent to running turns, and the idempotency records of the agent routes.

CREATE TABLE agent_conversations (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  machine_id TEXT NOT NULL,
  provider TEXT NOT NULL,
  -- The agent's own session id (claude's session, codex's thread, opencode's session): resume continues it.
  session_id TEXT,
  -- The agent's own usage totals for its session as it last reported them (codex reports totals).
  usage_totals TEXT,
  status TEXT NOT NULL CHECK (status IN ('idle', 'running')),
  turn_count INTEGER NOT NULL DEFAULT 0,
  latest_turn_id TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX agent_conversations_by_machine ON agent_conversations (machine_id, id);

CREATE TABLE agent_turns (
  id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL REFERENCES agent_conversations (id) ON DELETE CASCADE,
  organization_id TEXT NOT NULL,
  machine_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('starting', 'running', 'completed', 'failed', 'interrupted')),
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  reasoning_effort TEXT,
  resume INTEGER NOT NULL,
  interrupt_requested INTEGER NOT NULL DEFAULT 0,
  error_code TEXT,
  exit_code INTEGER,
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  finished_at BIGINT
);
CREATE INDEX agent_turns_by_conversation ON agent_turns (conversation_id, created_at);

-- seq counts per conversation from 1; a cursor is the seq of the last event read.
CREATE TABLE agent_events (
  conversation_id TEXT NOT NULL REFERENCES agent_conversations (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  turn_id TEXT,
  type TEXT NOT NULL,
  data TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (conversation_id, seq)
);

CREATE TABLE agent_inputs (
  id TEXT PRIMARY KEY,
  turn_id TEXT NOT NULL REFERENCES agent_turns (id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('steer', 'interrupt')),
  text TEXT,
  force INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  accepted_at BIGINT
);
CREATE INDEX agent_inputs_by_turn ON agent_inputs (turn_id, created_at);

CREATE TABLE agent_idempotency_keys (
  organization_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  -- The turn a prompt started, or the input a steer or interrupt sent.
  turn_id TEXT NOT NULL,
  input_id TEXT,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (organization_id, idempotency_key)
);
