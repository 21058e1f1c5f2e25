-- What a change owes to someone outside the fabric (Event Grid's notices: channel
-- 'eventgrid'), written in the change's own transaction, so that a crash never keeps a
-- change and loses what it owes. Its reader deletes a row once it has taken the message
-- over (Event Grid: in the transaction that keeps it pending for each subscription), and
-- reads what is left when it starts, or takes the lead of a scaled-out fleet. ``pos``
-- keeps the order the changes were made in.
CREATE TABLE outbox (
    pos BIGINT GENERATED ALWAYS AS IDENTITY,
    id TEXT NOT NULL PRIMARY KEY,
    channel TEXT NOT NULL,
    body TEXT NOT NULL
);
