"""The cluster's metrics: the series a scrape shows (golden), and how they follow the fleet."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from forewarn.server.cluster.metrics import ClusterMetrics
from forewarn.store.postgres_cluster import Member

GOLDEN = Path(__file__).parent / "golden" / "cluster_metrics.txt"


def member(member_id: str, role: str, lag: float | None = None) -> Member:
    return Member(
        id=member_id, host="h", pid=1, control_url=f"http://{member_id}", role=role,
        applied_seq=7, lag_seconds=lag, started_at=0.0, seen_seconds_ago=0.0,
    )  # fmt: skip


def test_a_scrape_names_and_explains_every_series() -> None:
    registry = CollectorRegistry()
    ClusterMetrics(registry)
    text = generate_latest(registry).decode()
    assert [line for line in text.splitlines() if line.startswith("# ")] == (
        GOLDEN.read_text().splitlines()
    )


def test_the_series_follow_leadership_position_and_members() -> None:
    registry = CollectorRegistry()
    metrics = ClusterMetrics(registry)
    value = registry.get_sample_value
    metrics.became_leader(4)
    metrics.set_position(12, None, connected=False)
    assert value("forewarn_cluster_leader") == 1
    assert value("forewarn_cluster_epoch") == 4
    assert value("forewarn_cluster_takeovers_total") == 1
    assert value("forewarn_replication_applied_seq") == 12
    assert value("forewarn_replication_connected") == 1  # a leader needs no feed
    metrics.became_follower()
    metrics.set_position(13, 0.25, connected=False)
    assert value("forewarn_cluster_leader") == 0
    assert value("forewarn_replication_lag_seconds") == 0.25
    assert value("forewarn_replication_connected") == 0

    metrics.set_members([member("a", "leader"), member("b", "follower", 0.5)])
    role = "forewarn_cluster_member_leader"
    assert value(role, {"member": "a", "control_url": "http://a"}) == 1
    assert value(role, {"member": "b", "control_url": "http://b"}) == 0
    assert value("forewarn_cluster_member_lag_seconds", {"member": "b"}) == 0.5
    metrics.set_members([member("b", "leader")])  # a is gone: its series go too
    assert value(role, {"member": "a", "control_url": "http://a"}) is None
    assert value(role, {"member": "b", "control_url": "http://b"}) == 1
