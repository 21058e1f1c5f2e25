-- Reaction tracking: where each operation was asked for (control, arm) and where each
-- event's approval came from (endpoint, arm, control, policy). Merged like the rest:
-- each column keeps the first value known.
ALTER TABLE reaction_operations ADD COLUMN via TEXT;
ALTER TABLE reaction_events ADD COLUMN approved_via TEXT;
