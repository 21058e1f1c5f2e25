-- Scale-out: one leader writes, every process follows the change log.
--
-- ``leader`` is a single row. Every write transaction first moves ``head`` on (which
-- locks the row, so writes are serialised and log sequence numbers have no gaps) and
-- checks ``epoch``: a takeover increments it, so a deposed leader's writes fail.
CREATE TABLE leader (
    id INT PRIMARY KEY CHECK (id = 1),
    epoch BIGINT NOT NULL,
    head BIGINT NOT NULL,
    holder TEXT,
    control_url TEXT,
    since TIMESTAMPTZ
);
INSERT INTO leader (id, epoch, head) VALUES (1, 0, 0);

-- Every committed change (msgpack of forewarn.fabric.Changes), in commit order; each
-- write NOTIFYs channel forewarn_changes with the new head. Old rows are pruned: a
-- follower that finds a gap reloads the whole state.
CREATE TABLE changes (
    seq BIGINT PRIMARY KEY,
    epoch BIGINT NOT NULL,
    committed_at DOUBLE PRECISION NOT NULL,
    data BYTEA NOT NULL
);

-- Approvals accepted by a follower's endpoint, waiting for the leader (NOTIFY
-- forewarn_requests); deleted once applied.
CREATE TABLE approval_requests (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    vm TEXT NOT NULL,
    event_ids TEXT[] NOT NULL,
    front_end TEXT NOT NULL,
    received_at DOUBLE PRECISION NOT NULL
);

-- The latest request a follower saw per scope (enablement and last-request time).
CREATE TABLE scope_requests (
    scope_id TEXT PRIMARY KEY,
    vm TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL
);

-- Each running process, refreshed every second: role, replication position and lag.
CREATE TABLE members (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INT NOT NULL,
    control_url TEXT,
    role TEXT NOT NULL,
    applied_seq BIGINT NOT NULL,
    lag_seconds DOUBLE PRECISION,
    started_at TIMESTAMPTZ NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL
);
