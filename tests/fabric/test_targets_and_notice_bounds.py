"""Which targets each operation takes (as the docs' table says: docs/concepts/events.md),
and notice bounds in the server's clock (the minimum and the maximum scale alike)."""

from __future__ import annotations

import re

import pytest

from forewarn.fabric import Fabric, InvalidOperation, OperationKind, OperationRequest, OperationSpec
from forewarn.fabric.planner import plan_request
from forewarn.fleet import build_topology
from tests.fabric.conftest import FabricFactory
from tests.support.docpages import section
from tests.support.fabrics import DAY, T0, fleet, only_event, submit

#: web-0/web-1 on hosts of their own; spots_0 alone on a host of Spot VMs.
FLEET = fleet(
    {"kind": "availability_set", "name": "web", "update_domains": 2,
     "vms": [{"name": "web-0", "host": "h-web-0", "update_domain": 0},
             {"name": "web-1", "host": "h-web-1", "update_domain": 1}]},
    {"kind": "scale_set", "name": "spots", "spot": True,
     "vms": [{"name": "spots_0", "host": "h-spots"}]},
)  # fmt: skip


def documented_targets() -> dict[str, set[str]]:
    """The docs' operations table: operation -> the kinds of target it names."""
    table = section("concepts/events.md", "## Operations, event types and notice")
    rows = re.findall(r"^\| `([a-z-]+)` \| ([^|]+) \|", table, re.MULTILINE)
    return {
        kind: {word for word in ("VM", "host", "scope") if re.search(rf"\b{word}\b", cell)}
        for kind, cell in rows
    }


def target(kind: OperationKind, what: str) -> OperationRequest:
    spot = kind in (OperationKind.SPOT_EVICTION, OperationKind.SCALE_IN)
    if what == "VM":
        return OperationRequest(kind=kind.value, vms=("spots_0" if spot else "web-0",))
    if what == "host":
        return OperationRequest(kind=kind.value, host="h-spots" if spot else "h-web-0")
    return OperationRequest(kind=kind.value, scope="spots" if spot else "web")


def test_the_readme_documents_every_operation() -> None:
    assert set(documented_targets()) == {k.value for k in OperationKind}


@pytest.mark.parametrize("what", ["VM", "host", "scope"])
@pytest.mark.parametrize("kind", list(OperationKind), ids=lambda k: k.value)
def test_targets_are_accepted_exactly_as_documented(
    build: FabricFactory, kind: OperationKind, what: str
) -> None:
    fabric = build(FLEET)
    request = target(kind, what)
    if what in documented_targets()[kind.value]:
        assert fabric.submit(request).kind == kind.value
        return
    with pytest.raises(InvalidOperation, match=f"not a {what}|name a VM or a host"):
        fabric.submit(request)
    assert fabric.operations() == [] and fabric.events() == []  # nothing changed


@pytest.mark.parametrize(
    "kind", ["live-migration", "degraded-hardware", "hardware-failure", "spot-eviction"]
)
def test_a_scope_target_of_host_level_work_says_which_operations_take_scopes(
    fabric: Fabric, kind: str
) -> None:
    with pytest.raises(InvalidOperation) as raised:
        fabric.submit(OperationRequest(kind=kind, scope="workers"))
    assert str(raised.value) == (
        f"{kind} concerns a VM or the VMs of a host, not a whole scope; name a VM or a host "
        "(only host-update, platform-reboot and platform-redeploy walk a scope's update domains)"
    )


def test_a_user_operation_on_a_host_with_one_vm_is_refused(build: FabricFactory) -> None:
    fabric = build(FLEET)
    with pytest.raises(InvalidOperation, match="user-reboot is a user operation; name a VM, not"):
        fabric.submit(OperationRequest(kind="user-reboot", host="h-web-0"))


def scaled_plan(notice: float, kind: str = "degraded-hardware", scale: float = 60.0) -> None:
    """Plan ``kind`` on web-0 with ``notice`` at ``scale``, as the engine does."""

    def min_notice(spec: OperationSpec, _vms: object) -> float:
        return spec.minimum_notice / scale

    request = OperationRequest(kind=kind, vms=("web-0",), notice_seconds=notice)
    plan_request(request, build_topology(FLEET), lambda _: False, min_notice, time_scale=scale)


@pytest.mark.parametrize("notice", [10.0, DAY / 60, 7 * DAY / 60])
def test_scaled_notice_bounds_are_both_divided_by_the_time_scale(notice: float) -> None:
    scaled_plan(notice)  # 10 min to 7 days of platform time: 10 s to 10,080 s here


@pytest.mark.parametrize(
    ("notice", "message"),
    [
        (9.0, "notice 9 s is below the minimum of 10 s for degraded-hardware "
              "(time scale 60: 600 s of platform time)"),
        (10081.0, "notice 10081 s is more than the maximum of 10080 s for degraded-hardware "
                  "(time scale 60: 7 days of platform time)"),
    ],
    ids=["below", "above"],
)  # fmt: skip
def test_scaled_notice_bounds_are_named_in_both_clocks(notice: float, message: str) -> None:
    with pytest.raises(InvalidOperation) as raised:
        scaled_plan(notice)
    assert str(raised.value) == message


def test_the_longest_notice_of_any_operation_scales_too() -> None:
    scaled_plan(7 * DAY / 60, kind="host-update")
    with pytest.raises(InvalidOperation, match="maximum of 10080 s for host-update"):
        scaled_plan(7 * DAY / 60 + 1, kind="host-update")


def test_a_fabric_at_time_scale_60_scales_the_longest_notice(build: FabricFactory) -> None:
    fabric = build(time_scale=60)
    op = submit(fabric, "degraded-hardware", "web-0", notice_seconds=7 * DAY / 60)
    assert only_event(fabric, op).not_before == T0 + 7 * DAY / 60
    with pytest.raises(InvalidOperation, match="maximum of 10080 s"):
        submit(fabric, "degraded-hardware", "web-1", notice_seconds=7 * DAY / 60 + 1)
