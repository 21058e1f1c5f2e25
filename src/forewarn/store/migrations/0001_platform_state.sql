-- The platform's state, table for table as in the SQLite store: records are msgspec JSON
-- (BYTEA: exact bytes, no JSONB rewriting); ``pos`` keeps insertion order (documents list
-- events in creation order), an upsert keeps a row's position.
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE operations (
    pos BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, data BYTEA NOT NULL
);
CREATE TABLE events (
    pos BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, data BYTEA NOT NULL
);
CREATE TABLE rollouts (
    pos BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, data BYTEA NOT NULL
);
CREATE TABLE scopes (
    pos BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, data BYTEA NOT NULL
);
CREATE TABLE deleted_vms (name TEXT PRIMARY KEY);
CREATE TABLE history (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at DOUBLE PRECISION NOT NULL,
    kind TEXT NOT NULL,
    scope_id TEXT,
    operation_id TEXT,
    event_id TEXT,
    detail BYTEA NOT NULL
);
CREATE INDEX history_event ON history (event_id);
CREATE INDEX history_operation ON history (operation_id);
