-- How many times reaction facts were written, by any process: one row, counted up in
-- the transaction of each write. A reader that graded the facts at one count knows that
-- nothing was written since while the count is the same (the verdict is kept between
-- requests: grading after a region rollout over a million VMs takes a minute).
CREATE TABLE reaction_writes (
    id BIGINT NOT NULL PRIMARY KEY CHECK (id = 1),
    writes BIGINT NOT NULL
);
