-- The history's entries of one kind found without reading the others: the dashboard
-- asks for the fleet resets since the end it last saw (``history(kind=...)``), and after
-- a region rollout over a million VMs the entries in between are millions.
CREATE INDEX history_kind ON history (kind, seq);
