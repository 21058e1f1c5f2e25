"""``Fabric.reset``: a fresh fleet for the next drill, built, written and published like
every change, replicated to a follower like every change, undone whole when the write
fails."""

from __future__ import annotations

from forewarn.fabric import Changes, Clock, Fabric, StoreUnavailable
from forewarn.store import SQLiteStore
from tests.support.fabrics import MINUTE, T0, incarnations, live, make_fabric, submit


class _FailingStore(SQLiteStore):
    fail = False

    def apply_all(self, batch: list[Changes]) -> None:  # type: ignore[override]
        if self.fail:
            raise StoreUnavailable("disk full")
        super().apply_all(batch)


def _busy(fabric: Fabric) -> None:
    evicted = live(fabric, submit(fabric, "spot-eviction", "workers_1"))[0].id
    fabric.start_event(evicted)
    fabric.advance(MINUTE)
    submit(fabric, "user-reboot", "web-0")


def test_a_follower_replicating_a_reset_shows_what_the_leader_shows() -> None:
    leader = make_fabric(enablement="always")
    follower = make_fabric(enablement="always", clock=Clock.virtual(start=T0))
    published: list[Changes] = []
    leader.on_publish(published.append)
    _busy(leader)
    follower.replicate(published)
    published.clear()
    leader.reset()
    assert len(published) == 1 and published[0].reset
    follower.replicate(published)
    assert follower.events() == [] and follower.operations() == []
    assert not follower.is_deleted("workers_1")
    assert incarnations(follower) == incarnations(leader)


def test_a_failed_reset_changes_nothing_and_timers_still_fire() -> None:
    store = _FailingStore(":memory:")
    fabric = make_fabric(enablement="always", store=store)
    _busy(fabric)
    before = (fabric.events(), fabric.operations(), incarnations(fabric))
    store.fail = True
    try:
        fabric.reset()
    except StoreUnavailable:
        pass
    else:  # pragma: no cover - the inline journal raises
        raise AssertionError("a failed reset must say so")
    assert (fabric.events(), fabric.operations(), incarnations(fabric)) == before
    assert fabric.is_deleted("workers_1")
    store.fail = False
    [reboot] = [e for e in fabric.events() if e.event_type.value == "Reboot"]
    fabric.advance(16 * MINUTE)  # its NotBefore passed: the timer survived the rollback
    assert fabric.event(reboot.id).status.value == "Started"
