-- Reaction tracking: who saw which event when, who approved it, each VM's polls.
--
-- Every front-end writes what it served; rows are merged, never overwritten (an event
-- keeps the first value known of each column, a VM its earliest sighting and approval
-- and its latest poll), so no front-end's facts hide another's.
CREATE TABLE reaction_events (
    id TEXT PRIMARY KEY,
    operation_id TEXT,
    kind TEXT,
    scope_id TEXT,
    event_type TEXT,
    source TEXT,
    resources TEXT,
    created_at DOUBLE PRECISION,
    not_before DOUBLE PRECISION,
    approved_by TEXT,
    approved_at DOUBLE PRECISION,
    started_at DOUBLE PRECISION,
    start_reason TEXT,
    ended_at DOUBLE PRECISION,
    ended TEXT
);
CREATE INDEX reaction_events_created ON reaction_events (created_at);

CREATE TABLE reaction_vms (
    event_id TEXT NOT NULL,
    vm TEXT NOT NULL,
    first_seen DOUBLE PRECISION,
    seen_started DOUBLE PRECISION,
    incarnation BIGINT,
    approved_at DOUBLE PRECISION,
    last_poll_before_start DOUBLE PRECISION,
    PRIMARY KEY (event_id, vm)
);

CREATE TABLE reaction_polls (
    vm TEXT PRIMARY KEY,
    first_poll DOUBLE PRECISION,
    last_poll DOUBLE PRECISION,
    api_version TEXT
);
