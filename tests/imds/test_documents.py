"""What each VM is shown: its scope's events, per-version rendering, enablement, deletion."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

import forewarn.imds.app as app_module
from tests.imds.conftest import (
    GPU_SCOPE,
    INSTANCE,
    INSTANCE_VERSION,
    NEWEST,
    NOT_FOUND_BODY,
    VERSIONS_PATH,
    Imds,
    ImdsFactory,
    assert_json_reply,
    event_id,
)
from tests.support.fabrics import fleet
from tests.support.wire import VERSIONS

DAY = 24 * 3600.0

DEMO_SCOPES = {
    "web": ["web-0", "web-1", "web-2", "web-3", "web-4", "web-5"],
    "workers": ["workers_0", "workers_1", "workers_2", "workers_3"],
    "jumpbox": ["jumpbox"],
    "shop": ["FrontEnd_IN_0", "FrontEnd_IN_1", "BackEnd_IN_0"],
}
SCOPE_OF = {vm: scope for scope, vms in DEMO_SCOPES.items() for vm in vms}


@pytest.fixture
def one_event_per_scope(imds: Imds) -> dict[str, str]:
    """A platform reboot in every demo scope; scope id -> its event id."""
    out = {}
    for vm in ("web-0", "workers_1", "jumpbox", "FrontEnd_IN_0"):
        out[SCOPE_OF[vm]] = imds.only_event(imds.submit("platform-reboot", vm)).id
    return out


# ------------------------------------------------------------------- visibility


@pytest.mark.parametrize("vm", list(SCOPE_OF))
async def test_each_vm_sees_exactly_its_scopes_events(
    imds: Imds, one_event_per_scope: dict[str, str], vm: str
) -> None:
    response = await imds.get(vm)
    assert response.status_code == 200
    assert response.headers["etag"] == '"2"'
    document = response.json()
    assert document["DocumentIncarnation"] == 2
    assert [e["EventId"] for e in document["Events"]] == [one_event_per_scope[SCOPE_OF[vm]]]


async def test_event_of_one_scope_leaves_others_untouched(imds: Imds) -> None:
    imds.submit("platform-reboot", "web-0")
    for vm in ("workers_0", "jumpbox", "BackEnd_IN_0"):
        assert_json_reply(await imds.get(vm), 200, b'{"DocumentIncarnation":1,"Events":[]}')


async def test_every_vm_of_the_scope_sees_an_event_of_one_vm(imds: Imds) -> None:
    op = imds.submit("platform-reboot", "workers_2")
    event = imds.only_event(op)
    for vm in DEMO_SCOPES["workers"]:
        document = await imds.document(vm)
        assert [(e["EventId"], e["Resources"]) for e in document["Events"]] == [
            (event.id, ["workers_2"])
        ]


# ------------------------------------------------------- 2017-03-01 underscores


@pytest.mark.parametrize(
    ("target", "reader", "resource"),
    [
        ("web-0", "web-1", "_web-0"),
        ("workers_1", "workers_1", "_workers_1"),
        ("jumpbox", "jumpbox", "_jumpbox"),
        ("FrontEnd_IN_0", "FrontEnd_IN_0", "FrontEnd_IN_0"),
        ("FrontEnd_IN_0", "BackEnd_IN_0", "FrontEnd_IN_0"),
        ("BackEnd_IN_0", "FrontEnd_IN_1", "BackEnd_IN_0"),
    ],
)
async def test_2017_03_01_underscores_iaas_names_only(
    imds: Imds, target: str, reader: str, resource: str
) -> None:
    imds.submit("platform-reboot", target)
    old = await imds.document(reader, "2017-03-01")
    assert [e["Resources"] for e in old["Events"]] == [[resource]]
    for version in VERSIONS[1:]:
        new = await imds.document(reader, version)
        assert [e["Resources"] for e in new["Events"]] == [[target]]


async def test_cloud_service_document_at_2017_03_01_exactly(imds: Imds) -> None:
    imds.submit("platform-reboot", "FrontEnd_IN_0")
    response = await imds.get("FrontEnd_IN_1", version="2017-03-01")
    expected = (
        b'{"DocumentIncarnation":2,"Events":[{"EventId":"%s","EventStatus":"Scheduled",'
        b'"EventType":"Reboot","ResourceType":"VirtualMachine","Resources":["FrontEnd_IN_0"],'
        b'"NotBefore":"Tue, 14 Nov 2023 22:28:20 GMT"}]}' % event_id(1).encode()
    )
    assert_json_reply(response, 200, expected)


# ------------------------------------------------------------ event-type gating

TERMINATE_2020 = (
    b'{"DocumentIncarnation":2,"Events":[{"EventId":"%s","EventStatus":"Scheduled",'
    b'"EventType":"Terminate","ResourceType":"VirtualMachine","Resources":["workers_1"],'
    b'"NotBefore":"Tue, 14 Nov 2023 22:18:20 GMT","Description":"Virtual machine is being '
    b'deleted.","EventSource":"User","DurationInSeconds":-1}]}' % event_id(1).encode()
)


@pytest.mark.parametrize(
    ("kind", "first_version"),
    [("scale-in", "2019-01-01"), ("spot-eviction", "2017-11-01")],
)
@pytest.mark.parametrize("version", VERSIONS)
async def test_newer_event_types_are_hidden_from_older_versions(
    imds: Imds, kind: str, first_version: str, version: str
) -> None:
    imds.submit(kind, "workers_1")
    response = await imds.get("workers_3", version=version)
    assert response.status_code == 200
    assert response.headers["etag"] == '"2"'
    document = response.json()
    assert document["DocumentIncarnation"] == 2
    visible = [e["EventId"] for e in document["Events"]]
    assert visible == ([event_id(1)] if version >= first_version else [])


async def test_terminate_at_2017_11_01_and_2019_01_01(imds: Imds) -> None:
    imds.submit("scale-in", "workers_1")
    hidden = await imds.get("workers_1", version="2017-11-01")
    assert_json_reply(hidden, 200, b'{"DocumentIncarnation":2,"Events":[]}')
    shown = await imds.get("workers_1", version="2019-01-01")
    assert shown.headers["etag"] == hidden.headers["etag"] == '"2"'
    assert [(e["EventType"], e["Resources"]) for e in shown.json()["Events"]] == [
        ("Terminate", ["workers_1"])
    ]
    assert_json_reply(await imds.get("workers_1", version=NEWEST), 200, TERMINATE_2020)


# -------------------------------------------------------------------- GPU scope


async def test_gpu_vms_each_see_only_their_own_events(make_imds: ImdsFactory) -> None:
    imds = make_imds(fleet(GPU_SCOPE, {"kind": "availability_set", "name": "web", "vms": 2}))
    first = imds.only_event(imds.submit("platform-reboot", "gpu_0")).id
    second = imds.only_event(imds.submit("platform-redeploy", "gpu_1")).id
    for vm, mine in (("gpu_0", first), ("gpu_1", second)):
        for version in VERSIONS:
            response = await imds.get(vm, version=version)
            assert response.headers["etag"] == '"3"'
            events = response.json()["Events"]
            assert [e["EventId"] for e in events] == [mine]
    assert (await imds.document("web-0"))["Events"] == []


async def test_gpu_operation_on_both_vms_is_split(make_imds: ImdsFactory) -> None:
    imds = make_imds(fleet(GPU_SCOPE))
    op = imds.submit("platform-reboot", "gpu_0", "gpu_1")
    events = {e.resources: e.id for e in imds.events_of(op)}
    assert set(events) == {("gpu_0",), ("gpu_1",)}
    for vm in ("gpu_0", "gpu_1"):
        document = await imds.document(vm)
        assert [e["EventId"] for e in document["Events"]] == [events[(vm,)]]


async def test_gpu_scale_set_with_two_fault_domains_shares_events(
    make_imds: ImdsFactory,
) -> None:
    imds = make_imds(fleet({**GPU_SCOPE, "fault_domains": 2}))
    event = imds.only_event(imds.submit("platform-reboot", "gpu_0")).id
    for vm in ("gpu_0", "gpu_1"):
        assert [e["EventId"] for e in (await imds.document(vm))["Events"]] == [event]


# ------------------------------------------------------------------- enablement


class SleepRecorder:
    """Stands in for ``asyncio`` in the app module, recording every sleep it asks for."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.calls.append(seconds)
        await asyncio.sleep(seconds)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> SleepRecorder:
    recorder = SleepRecorder()
    monkeypatch.setattr(app_module, "asyncio", SimpleNamespace(sleep=recorder.sleep))
    return recorder


@pytest.fixture
def lazy(make_imds: ImdsFactory) -> Imds:
    """The demo fleet with the faithful enablement and a 0.2 s first-call delay."""
    return make_imds(enablement="on-first-request", first_call_delay=0.2)


async def timed_get(imds: Imds, vm: str, **kwargs: Any) -> tuple[int, float]:
    start = time.monotonic()
    response = await imds.get(vm, **kwargs)
    return response.status_code, time.monotonic() - start


async def test_first_request_enables_its_scope_after_a_delay(
    lazy: Imds, sleeps: SleepRecorder
) -> None:
    assert not any(lazy.fabric.is_enabled(s) for s in DEMO_SCOPES)
    status, elapsed = await timed_get(lazy, "web-1")
    assert status == 200
    assert elapsed >= 0.2
    assert sleeps.calls == [0.2]
    assert lazy.fabric.is_enabled("web")
    assert not lazy.fabric.is_enabled("workers")
    assert (await lazy.get("web-1")).status_code == 200
    assert (await lazy.get("web-4")).status_code == 200
    assert sleeps.calls == [0.2]


async def test_each_scope_is_delayed_once(lazy: Imds, sleeps: SleepRecorder) -> None:
    for vm in ("web-1", "web-2", "workers_0", "workers_3", "jumpbox", "FrontEnd_IN_1"):
        assert (await lazy.get(vm)).status_code == 200
    assert sleeps.calls == [0.2, 0.2, 0.2, 0.2]
    assert all(lazy.fabric.is_enabled(s) for s in DEMO_SCOPES)


async def test_first_post_is_delayed_and_enables(lazy: Imds, sleeps: SleepRecorder) -> None:
    await lazy.get("web-1")
    op = lazy.submit("degraded-hardware", "web-0")  # seven days of notice
    lazy.fabric.advance(DAY)
    assert not lazy.fabric.is_enabled("web")
    start = time.monotonic()
    response = await lazy.post("web-0", lazy.only_event(op).id)
    assert time.monotonic() - start >= 0.2
    assert_json_reply(response, 200, b"")
    assert sleeps.calls == [0.2, 0.2]
    assert lazy.fabric.is_enabled("web")
    assert lazy.only_event(op).status == "Started"


async def test_rejected_first_post_still_enables(lazy: Imds, sleeps: SleepRecorder) -> None:
    response = await lazy.request("POST", vm="web-1", content=b"{}")
    assert response.status_code == 400
    assert lazy.fabric.is_enabled("web")
    assert (await lazy.get("web-2")).status_code == 200
    assert len(sleeps.calls) <= 1


# Regression: a first POST rejected with 400 enabled its scope but lost the delay.
async def test_rejected_first_post_is_delayed(lazy: Imds, sleeps: SleepRecorder) -> None:
    start = time.monotonic()
    response = await lazy.request("POST", vm="web-1", content=b"{}")
    assert response.status_code == 400
    assert lazy.fabric.is_enabled("web")
    assert sleeps.calls == [0.2]
    assert time.monotonic() - start >= 0.2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"version": None},
        {"version": "latest"},
        {"metadata": None},
        {"path": INSTANCE, "version": INSTANCE_VERSION},
        {"path": VERSIONS_PATH, "version": None},
        {"path": "/metadata/nothing"},
    ],
)
async def test_other_requests_do_not_enable(
    lazy: Imds, sleeps: SleepRecorder, kwargs: dict[str, object]
) -> None:
    await lazy.get("web-1", **kwargs)
    assert sleeps.calls == []
    assert not lazy.fabric.is_enabled("web")


async def test_no_notice_before_enablement(lazy: Imds, sleeps: SleepRecorder) -> None:
    op = lazy.submit("platform-reboot", "web-0")
    assert lazy.events_of(op) == []
    assert (await lazy.document("web-0"))["Events"] == []
    second = lazy.submit("platform-reboot", "web-0")
    assert [e["EventId"] for e in (await lazy.document("web-0"))["Events"]] == [
        lazy.only_event(second).id
    ]


async def test_idle_scope_is_disabled_and_delayed_again(lazy: Imds, sleeps: SleepRecorder) -> None:
    await lazy.get("web-1")
    lazy.fabric.advance(DAY - 1)
    await lazy.get("web-1")
    assert sleeps.calls == [0.2]
    lazy.fabric.advance(DAY)
    assert not lazy.fabric.is_enabled("web")
    status, elapsed = await timed_get(lazy, "web-1")
    assert status == 200
    assert elapsed >= 0.2
    assert sleeps.calls == [0.2, 0.2]
    assert lazy.fabric.is_enabled("web")


async def test_no_delay_when_every_scope_is_always_enabled(
    make_imds: ImdsFactory, sleeps: SleepRecorder
) -> None:
    imds = make_imds(first_call_delay=0.2)
    assert (await imds.get("web-1")).status_code == 200
    assert sleeps.calls == []


async def test_zero_delay_never_sleeps(make_imds: ImdsFactory, sleeps: SleepRecorder) -> None:
    imds = make_imds(enablement="on-first-request")
    assert (await imds.get("web-1")).status_code == 200
    assert imds.fabric.is_enabled("web")
    assert sleeps.calls == []


# ------------------------------------------------------------------ deleted VMs


@pytest.mark.parametrize(
    ("kind", "notice", "event_type"),
    [("spot-eviction", 30.0, "Preempt"), ("scale-in", 300.0, "Terminate")],
)
async def test_deleted_vm_gets_404(imds: Imds, kind: str, notice: float, event_type: str) -> None:
    op = imds.submit(kind, "workers_0")
    event = imds.only_event(op)
    seen = await imds.document("workers_0")
    assert [(e["EventType"], e["Resources"]) for e in seen["Events"]] == [
        (event_type, ["workers_0"])
    ]
    imds.fabric.advance(notice)
    started = await imds.document("workers_0")
    assert [(e["EventStatus"], e["NotBefore"]) for e in started["Events"]] == [("Started", "")]
    imds.fabric.advance(60.0 + 1)
    assert imds.fabric.is_deleted("workers_0")
    requests: list[Callable[[], Awaitable[httpx.Response]]] = [
        lambda: imds.get("workers_0"),
        lambda: imds.post("workers_0", event.id),
        lambda: imds.get("workers_0", version=None),
        lambda: imds.get("workers_0", path=INSTANCE, version=INSTANCE_VERSION),
        lambda: imds.get("workers_0", path=VERSIONS_PATH, version=None),
        lambda: imds.request("PUT", vm="workers_0"),
    ]
    for request in requests:
        assert_json_reply(await request(), 404, NOT_FOUND_BODY)
    raw = await imds.raw(client=(imds.address("workers_0"), 50000))
    assert (raw.status, raw.body) == (404, NOT_FOUND_BODY)
    survivor = await imds.get("workers_1")
    assert_json_reply(survivor, 200, b'{"DocumentIncarnation":4,"Events":[]}')
