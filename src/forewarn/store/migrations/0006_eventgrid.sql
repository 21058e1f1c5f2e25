-- Event Grid: what each subscription (a central controller's webhook) was delivered of
-- each event, for the rehearsal report, merged like the other reaction tables (earliest
-- times, most attempts); and the subscriptions themselves, so a restart delivers again
-- to every subscriber without a new handshake (``body``: the subscription as JSON).
CREATE TABLE reaction_deliveries (
    event_id TEXT NOT NULL,
    subscription TEXT NOT NULL,
    first_attempt DOUBLE PRECISION,
    scheduled_at DOUBLE PRECISION,
    delivered_at DOUBLE PRECISION,
    attempts BIGINT,
    failed_at DOUBLE PRECISION,
    PRIMARY KEY (event_id, subscription)
);

CREATE TABLE eventgrid_subscriptions (
    name TEXT NOT NULL PRIMARY KEY,
    body TEXT NOT NULL
);
