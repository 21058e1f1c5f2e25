-- Event Grid notices a subscriber has not yet delivered (waiting for their first attempt
-- or for a retry), so that a restart, or a process taking the lead of a scaled-out fleet,
-- delivers them: the notice as JSON (``id``, its Event Grid id, is the one every
-- redelivery carries), the attempts made so far, when it was first offered and when its
-- next attempt is due (epoch seconds). A row goes once the notice is delivered, fails
-- for good or is dropped, and with its subscription.
CREATE TABLE eventgrid_pending (
    subscription TEXT NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    first_at DOUBLE PRECISION NOT NULL,
    due_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (subscription, id)
);
