"""Host maintenance across scopes (L4) and rolling maintenance of a scope (S4)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from forewarn.contract import EventStatus
from forewarn.fabric import (
    EventNotVisible,
    EventRecord,
    Fabric,
    OperationRequest,
)
from tests.support.fabrics import (
    DEMO_LAYOUT,
    MINUTE,
    T0,
    incarnations,
    live,
    only_event,
    status,
    submit,
)


def on_host(host: str) -> dict[str, set[str]]:
    """The demo VMs on ``host``, by scope."""
    out: dict[str, set[str]] = defaultdict(set)
    for name, (scope, vm_host, _ud) in DEMO_LAYOUT.items():
        if vm_host == host:
            out[scope].add(name)
    return dict(out)


def assert_well_formed(event: EventRecord) -> None:
    """An event lists VMs of its own scope, on one host, in one update domain."""
    layouts = {DEMO_LAYOUT[n] for n in event.resources}
    assert {scope for scope, _, _ in layouts} == {event.scope_id}
    assert len({host for _, host, _ in layouts}) == 1
    assert len({ud for _, _, ud in layouts}) == 1


@pytest.mark.parametrize("host", ["host-1", "host-2", "host-3", "host-4"])
def test_host_maintenance_gives_each_scope_one_event_listing_only_its_vms_on_that_host(
    fabric: Fabric, host: str
) -> None:
    op = submit(fabric, "host-update", host=host)
    events = live(fabric, op)
    covered: dict[str, set[str]] = defaultdict(set)
    for event in events:
        assert_well_formed(event)
        covered[event.scope_id].update(event.resources)
    assert covered == on_host(host)
    # A host never holds two update domains of one scope (S4): one event per scope.
    assert sorted(e.scope_id for e in events) == sorted(on_host(host))
    for scope_id in fabric.topology.scopes:
        shown = {e.event_id for e in fabric.view(scope_id).events}
        assert shown == {e.id for e in events if e.scope_id == scope_id}


def test_host_with_one_vm_per_scope_gets_exactly_one_event_per_scope(fabric: Fabric) -> None:
    op = submit(fabric, "host-update", host="host-4")
    assert sorted((e.scope_id, e.resources) for e in live(fabric, op)) == [
        ("jumpbox", ("jumpbox",)),
        ("web", ("web-3",)),
        ("workers", ("workers_0",)),
    ]


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        (
            "host-2",
            [
                ("shop", ("FrontEnd_IN_1",)),
                ("web", ("web-1", "web-4")),
                ("workers", ("workers_2",)),
            ],
        ),
        (
            "host-3",
            [
                ("shop", ("BackEnd_IN_0",)),
                ("web", ("web-2", "web-5")),
                ("workers", ("workers_3",)),
            ],
        ),
    ],
)
def test_vms_of_one_scope_on_a_host_share_that_scopes_single_event(
    fabric: Fabric, host: str, expected: list[tuple[str, tuple[str, ...]]]
) -> None:
    op = submit(fabric, "host-update", host=host)
    assert sorted((e.scope_id, e.resources) for e in live(fabric, op)) == expected


@pytest.mark.parametrize("host", ["host-1", "host-3"])
def test_host_operation_starts_only_when_every_event_is_approved(fabric: Fabric, host: str) -> None:
    op = submit(fabric, "host-update", host=host)
    events = live(fabric, op)
    assert len(events) == len(on_host(host)) == 3
    before = incarnations(fabric)
    for event in events[:-1]:
        approver = fabric.topology.vm(event.resources[0])
        fabric.approve(approver, [event.id])
        assert {status(fabric, e.id) for e in events} == {EventStatus.SCHEDULED}
        assert incarnations(fabric) == before
    last = events[-1]
    fabric.approve(fabric.topology.vm(last.resources[0]), [last.id])
    assert {status(fabric, e.id) for e in events} == {EventStatus.STARTED}
    touched = {e.scope_id for e in events}
    assert incarnations(fabric) == {s: n + (s in touched) for s, n in before.items()}
    assert all(fabric.vm_status(n) == "frozen" for n in op.vms)


def test_partially_approved_host_operation_starts_at_not_before(fabric: Fabric) -> None:
    op = submit(fabric, "host-update", host="host-2")
    first, *rest = live(fabric, op)
    fabric.approve(fabric.topology.vm(first.resources[0]), [first.id])
    fabric.advance(15 * MINUTE - 1)
    assert {status(fabric, e.id) for e in [first, *rest]} == {EventStatus.SCHEDULED}
    fabric.advance(1)
    assert {status(fabric, e.id) for e in [first, *rest]} == {EventStatus.STARTED}
    fabric.advance(5 * MINUTE)
    assert all(fabric.view(s).events == () for s in fabric.topology.scopes)


def test_approving_one_event_from_another_scope_is_not_allowed(fabric: Fabric) -> None:
    op = submit(fabric, "host-update", host="host-4")
    jumpbox_event = next(e for e in live(fabric, op) if e.scope_id == "jumpbox")
    with pytest.raises(EventNotVisible):
        fabric.approve(fabric.topology.vm("web-3"), [jumpbox_event.id])


def test_force_starting_one_event_starts_the_whole_operation(fabric: Fabric) -> None:
    op = submit(fabric, "host-update", host="host-4")
    events = live(fabric, op)
    fabric.start_event(events[0].id)
    assert {status(fabric, e.id) for e in events} == {EventStatus.STARTED}


def test_canceling_one_scope_leaves_the_others_scheduled(fabric: Fabric) -> None:
    op = submit(fabric, "host-update", host="host-3")
    web, *others = live(fabric, op)
    assert web.scope_id == "web"
    assert sorted(e.scope_id for e in others) == ["shop", "workers"]
    fabric.cancel_event(web.id)
    assert fabric.view("web").events == ()
    assert {status(fabric, e.id) for e in others} == {EventStatus.SCHEDULED}
    fabric.advance(15 * MINUTE)
    assert {status(fabric, e.id) for e in others} == {EventStatus.STARTED}


def test_canceling_the_last_unapproved_event_starts_the_approved_rest(fabric: Fabric) -> None:
    op = submit(fabric, "host-update", host="host-3")
    web, *others = live(fabric, op)
    for event in others:
        fabric.approve(fabric.topology.vm(event.resources[0]), [event.id])
    fabric.cancel_event(web.id)
    assert {status(fabric, e.id) for e in others} == {EventStatus.STARTED}


def test_canceled_scope_of_a_spot_eviction_keeps_its_vm(fabric: Fabric) -> None:
    op = submit(fabric, "spot-eviction", "workers_0", "workers_1")  # two update domains
    first, second = live(fabric, op)
    fabric.cancel_event(first.id)
    fabric.advance(30 + MINUTE)
    assert fabric.is_deleted(second.resources[0])
    assert not fabric.is_deleted(first.resources[0])


def test_canceled_scope_of_host_maintenance_is_not_impacted(fabric: Fabric) -> None:
    op = submit(fabric, "host-update", host="host-4")
    web = next(e for e in live(fabric, op) if e.scope_id == "web")
    fabric.cancel_event(web.id)
    fabric.advance(15 * MINUTE)
    assert fabric.vm_status("jumpbox") == "frozen"
    assert fabric.vm_status("web-3") == "running"


# ------------------------------------------------------------------ rolling maintenance


def walk(fabric: Fabric, scope: str, *, approve: bool = False) -> list[tuple[int, ...]]:
    """Run a rollout to the end; the update domains shown at each change, in order."""
    shown: list[tuple[int, ...]] = []
    for _ in range(100):
        events = fabric.view(scope).events
        for event in events:
            assert_well_formed(fabric.event(event.event_id))
        uds = tuple(sorted({DEMO_LAYOUT[n][2] for e in events for n in e.resources}))
        assert len(uds) <= 1, "two update domains at once"
        if uds and (not shown or shown[-1] != uds):
            shown.append(uds)
        if approve:
            scheduled = [e.event_id for e in events if e.status is EventStatus.SCHEDULED]
            if scheduled:
                fabric.approve(fabric.topology.vm(events[0].resources[0]), scheduled)
                continue
        due = fabric.next_due()
        if due is None:
            return shown
        fabric.advance(due - fabric.clock.now())
    raise AssertionError("the rollout never ended")


@pytest.mark.parametrize("approve", [False, True])
def test_rolling_platform_reboot_walks_update_domains_one_at_a_time(
    fabric: Fabric, approve: bool
) -> None:
    op = fabric.submit(OperationRequest(kind="platform-reboot", scope="web"))
    assert sorted(op.vms) == ["web-0", "web-3"]
    assert walk(fabric, "web", approve=approve) == [(0,), (1,), (2,)]
    (rollout,) = fabric.rollouts()
    assert rollout.done
    assert all(o.state.value == "completed" for o in fabric.operations())
    assert fabric.view("web").events == ()


def test_rolling_maintenance_keeps_hosts_apart_within_an_update_domain(fabric: Fabric) -> None:
    fabric.submit(OperationRequest(kind="host-update", scope="web"))
    events = fabric.view("web").events
    assert sorted(e.resources for e in events) == [("web-0",), ("web-3",)]
    assert {e.not_before for e in events} == {T0 + 15 * MINUTE}


def test_canceling_a_batch_moves_the_rollout_on(fabric: Fabric) -> None:
    fabric.submit(OperationRequest(kind="platform-redeploy", scope="shop"))
    first_batch = fabric.view("shop").events
    assert sorted(e.resources for e in first_batch) == [("BackEnd_IN_0",), ("FrontEnd_IN_0",)]
    fabric.cancel_event(first_batch[0].event_id)
    assert [e.event_id for e in fabric.view("shop").events] == [first_batch[1].event_id]
    fabric.cancel_event(first_batch[1].event_id)
    (event,) = fabric.view("shop").events
    assert event.resources == ("FrontEnd_IN_1",)
    assert event.not_before == T0 + 10 * MINUTE
    assert fabric.view("shop").incarnation == 4


def test_rollout_skips_vms_deleted_meanwhile(fabric: Fabric) -> None:
    fabric.submit(OperationRequest(kind="platform-reboot", scope="workers"))
    fabric.start_event(only_event(fabric, submit(fabric, "spot-eviction", "workers_1")).id)
    fabric.advance(MINUTE)
    assert fabric.is_deleted("workers_1")
    fabric.advance(24 * MINUTE)  # the first update domain started at 15 min, is removed at 25
    (event,) = fabric.view("workers").events
    assert (event.event_type.value, event.resources) == ("Reboot", ("workers_3",))
    fabric.advance(25 * MINUTE)
    assert fabric.view("workers").events == ()
    assert fabric.next_due() is None
    assert fabric.rollouts()[0].done


def test_rollout_batch_never_lists_a_vm_deleted_at_the_same_instant(fabric: Fabric) -> None:
    fabric.submit(OperationRequest(kind="host-update", scope="workers"))
    fabric.advance(18 * MINUTE + 30)  # UD 0 started at 15 min; removed, UD 1 due, at 20 min
    submit(fabric, "spot-eviction", "workers_1")  # in UD 1: deleted 30 s + 1 min later
    fabric.advance(30 + MINUTE)
    assert fabric.is_deleted("workers_1")
    listed = {n for e in fabric.view("workers").events for n in e.resources}
    assert listed == {"workers_3"}
