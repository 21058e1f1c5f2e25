"""Prometheus metrics of a scaled-out fleet: who leads, and how far behind each view is.

Each process exports its own role, epoch, log position and replication lag, and (from
the ``members`` table, refreshed every second) every live process's role and lag, so a
single scrape of any process shows the whole fleet.
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from forewarn.store.postgres_cluster import Member

__all__ = ["LABELS", "ClusterMetrics"]

_LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


#: What ``/metrics`` says about each series (``HELP``).
_HELP = {
    "forewarn_cluster_leader": "1 while this process leads the fleet",
    "forewarn_cluster_epoch": "Leadership epoch this process last led under",
    "forewarn_cluster_takeovers": "Times this process became the leader",
    "forewarn_replication_applied_seq": "Last change-log entry this process's views hold",
    "forewarn_replication_lag_seconds": (
        "Commit-to-view time of the last change this process applied (0 on the leader)"
    ),
    "forewarn_replication_apply_lag_seconds": (
        "Commit-to-view time of every change a follower applied"
    ),
    "forewarn_replication_connected": "1 while the change feed is connected",
    "forewarn_replication_reloads": "Full reloads (a hole in the log, a reconnect)",
    "forewarn_cluster_relayed_requests_applied": (
        "Requests relayed by followers that this process applied as leader"
    ),
    "forewarn_cluster_member_leader": "1 for the member that leads, per live member",
    "forewarn_cluster_member_lag_seconds": "Replication lag each live member reports",
}

#: The label names of the series that have labels (the Metrics reference page reads them).
LABELS: dict[str, tuple[str, ...]] = {
    "forewarn_cluster_member_leader": ("member", "control_url"),
    "forewarn_cluster_member_lag_seconds": ("member",),
}


class ClusterMetrics:
    """The cluster's gauges and counters in one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str) -> Gauge:
            return Gauge(name, _HELP[name], LABELS.get(name, ()), registry=registry)

        def count(name: str) -> Counter:
            return Counter(name, _HELP[name], registry=registry)

        self.leader = gauge("forewarn_cluster_leader")
        self.epoch = gauge("forewarn_cluster_epoch")
        self.takeovers = count("forewarn_cluster_takeovers")
        self.applied = gauge("forewarn_replication_applied_seq")
        self.lag = gauge("forewarn_replication_lag_seconds")
        histogram = "forewarn_replication_apply_lag_seconds"
        self.lag_histogram = Histogram(
            histogram, _HELP[histogram], buckets=_LAG_BUCKETS, registry=registry
        )
        self.connected = gauge("forewarn_replication_connected")
        self.reloads = count("forewarn_replication_reloads")
        self.applied_requests = count("forewarn_cluster_relayed_requests_applied")
        self.member_role = gauge("forewarn_cluster_member_leader")
        self.member_lag = gauge("forewarn_cluster_member_lag_seconds")
        self._members: set[tuple[str, str]] = set()
        self._leading = False

    def observe_lag(self, seconds: float) -> None:
        self.lag_histogram.observe(seconds)

    def became_leader(self, epoch: int) -> None:
        self._leading = True
        self.leader.set(1)
        self.epoch.set(epoch)
        self.takeovers.inc()
        self.lag.set(0)

    def became_follower(self) -> None:
        self._leading = False
        self.leader.set(0)

    def set_position(self, applied: int, lag: float | None, connected: bool) -> None:
        self.applied.set(applied)
        if lag is not None:
            self.lag.set(lag)
        self.connected.set(1 if connected or self._leading else 0)

    def set_members(self, members: Sequence[Member]) -> None:
        """Replace the per-member series with the live members."""
        live = {(m.id, m.control_url or "") for m in members}
        for member_id, url in self._members - live:
            self.member_role.remove(member_id, url)
            self.member_lag.remove(member_id)
        self._members = live
        for member in members:
            url = member.control_url or ""
            self.member_role.labels(member.id, url).set(1 if member.role == "leader" else 0)
            self.member_lag.labels(member.id).set(member.lag_seconds or 0.0)
