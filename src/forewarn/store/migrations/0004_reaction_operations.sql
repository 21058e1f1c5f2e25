-- Reaction tracking: each operation, the VMs it hit and those it hit with no notice
-- (no event records them), and for a rollout's batch its place in the rollout.
-- Merged like reaction_events: each column keeps the first value known.
CREATE TABLE reaction_operations (
    id TEXT PRIMARY KEY,
    kind TEXT,
    target TEXT,
    rollout_id TEXT,
    rollout_scope TEXT,
    batch BIGINT,
    batches BIGINT,
    vms TEXT,
    unnotified TEXT,
    event_ids TEXT,
    created_at DOUBLE PRECISION,
    not_before DOUBLE PRECISION,
    started_at DOUBLE PRECISION,
    ended_at DOUBLE PRECISION
);
CREATE INDEX reaction_operations_created ON reaction_operations (created_at);
