"""Scale-out on PostgreSQL: leadership, replication of views, the approval relay and
control-call forwarding of a fleet served by many processes, and their metrics."""
