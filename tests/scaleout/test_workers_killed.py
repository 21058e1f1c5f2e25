"""``forewarn serve --workers 2`` under SIGKILL. Its parent killed (the supervisor, as an
OOM killer or ``kill -9`` of the service's main process would): its workers go with it
(none left serving on the ports), also when one was being restarted at that moment, and
a restart on the same database finds every event and every approval answered 200. A
worker that follows killed: the VMs are served on by the other one meanwhile.
(The leading worker killed mid-rollout: ``test_workers.py``.)"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scaleout.conftest import VIRTUAL
from tests.scaleout.pg import PgDatabase
from tests.scaleout.rollout import PollingVm
from tests.scaleout.workers import fresh, leading_pair
from tests.support.marks import SLOW
from tests.support.serverproc import ServerProcess
from tests.support.waiting import wait_until

pytestmark = SLOW

#: The demo fleet's web VMs, each polling and approving from its own address.
WEB = {f"web-{i}": f"127.1.0.{i + 1}" for i in range(6)}
LATEST = {"api-version": "2020-07-01"}


def _children(pid: int) -> set[int]:
    """The processes ``pid`` started (workers, and multiprocessing's helpers)."""
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as listing:
            found.update(int(child) for child in listing.read().split())
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _kill_the_parent(server: ServerProcess) -> set[int]:
    """SIGKILL ``forewarn serve`` itself; its children, as they were then."""
    assert server.proc is not None
    children = _children(server.proc.pid)
    assert children, "no worker processes"
    server.kill(signal.SIGKILL)
    return children


def _wait_gone(pids: set[int]) -> None:
    try:
        wait_until(lambda: not any(_alive(p) for p in pids), 30, "the workers to exit")
    finally:
        for pid in pids:  # never leave one behind, whatever the test found
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def workers(pg: PgDatabase, tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path / "unused.db", ["--store", pg.url, "--workers", "2", *VIRTUAL])
    server.start(timeout=90)
    try:
        wait_until(lambda: leading_pair(server), 30, "two workers, one leading")
        yield server
    finally:
        pids = _children(server.proc.pid) if server.proc and server.proc.poll() is None else set()
        server.stop()
        _wait_gone(pids)


def test_the_parent_killed_takes_its_workers_and_a_restart_finds_every_approval(
    workers: ServerProcess,
) -> None:
    """Six VMs, an event each; three approved before, the other three approving at once
    (new connections, either worker): the parent is SIGKILLed as soon as one of them is
    answered 200."""
    events: dict[str, str] = {}
    for vm in WEB:
        created = fresh(
            workers.control_url + "/api/v1/operations", method="POST",
            json={"kind": "user-reboot", "target": vm},
        )  # fmt: skip
        assert created.status_code == 201, created.text
        (events[vm],) = created.json()["event_ids"]
    endpoint = workers.imds_url + "/metadata/scheduledevents"

    def approve(vm: str) -> httpx.Response:
        body = {"StartRequests": [{"EventId": events[vm]}]}
        return fresh(
            endpoint, method="POST", vm=WEB[vm], params=LATEST, headers={"Metadata": "true"},
            json=body,
        )  # fmt: skip

    def shown(vm: str) -> dict[str, Any]:
        response = fresh(endpoint, vm=WEB[vm], params=LATEST, headers={"Metadata": "true"})
        assert response.status_code == 200, response.text
        doc: dict[str, Any] = response.json()
        return doc

    answered: dict[str, int] = {}
    for vm in list(WEB)[:3]:
        response = wait_until(lambda v=vm: (r := approve(v)).status_code == 200 and r, 10, vm)
        answered[vm] = response.status_code
    seen = {vm: shown(vm)["DocumentIncarnation"] for vm in WEB}
    stop = threading.Event()

    def keep_approving(vm: str) -> None:  # until a 200, or the server is gone
        while not stop.is_set() and vm not in answered:
            try:
                response = approve(vm)
            except httpx.HTTPError:
                continue
            if response.status_code == 200:
                answered[vm] = 200
            time.sleep(0.005)

    threads = [threading.Thread(target=keep_approving, args=(vm,)) for vm in list(WEB)[3:]]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(answered) > 3, 10, "a fourth approval", interval=0.001)
    children = _kill_the_parent(workers)  # the last two on their way
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    _wait_gone(children)
    with pytest.raises(httpx.ConnectError):  # nobody serves the ports any more
        fresh(workers.control_url + "/api/v1/cluster")

    workers.start(timeout=90)  # the same command, ports and database
    wait_until(lambda: leading_pair(workers), 30, "two new workers, one leading")
    for vm, event_id in events.items():
        doc = shown(vm)
        assert doc["DocumentIncarnation"] >= seen[vm], (vm, doc)
        listed = {e["EventId"]: e["EventStatus"] for e in doc["Events"]}
        assert event_id in listed, (vm, doc)  # every event is there
        if vm in answered:  # every approval answered 200 too
            assert listed[event_id] == "Started", (vm, doc)
    history = fresh(workers.control_url + "/api/v1/history", params={"limit": 1000}).json()
    approved = {h["event_id"]: h["detail"]["by"] for h in history if h["kind"] == "event.approved"}
    assert {events[vm]: vm for vm in answered}.items() <= approved.items()
    print(f"\napproved before the kill: {sorted(answered)}")


def test_the_parent_killed_as_it_restarts_a_worker_leaves_no_worker_behind(
    workers: ServerProcess,
) -> None:
    """A worker dies; the parent starts another one a second later and is SIGKILLed
    while that one is still starting (before it could ask to die with its parent)."""
    members = leading_pair(workers)
    assert members is not None
    follower = next(m for m in members if m["role"] == "follower")
    os.kill(follower["pid"], signal.SIGKILL)
    wait_until(
        lambda: any("worker died; restarting it" in line for line in workers.banner),
        30, "the parent to notice",
    )  # fmt: skip
    assert workers.proc is not None
    before = _children(workers.proc.pid)
    replacement = wait_until(lambda: _children(workers.proc.pid) - before, 10, "a new worker")  # type: ignore[union-attr]
    time.sleep(0.05)  # started, still importing
    children = _kill_the_parent(workers) | replacement
    _wait_gone(children)


def test_a_follower_worker_killed_the_vms_are_served_on_and_it_is_replaced(
    workers: ServerProcess,
) -> None:
    """Six VMs poll the shared port with ETags (half on kept-alive connections, half on
    a new one each time) while the worker that does not lead is SIGKILLed: polls fail
    only as it dies (those it held, at most one per VM), every VM is answered again at
    once by the other worker, nothing a VM saw goes back, and the dead worker is
    replaced."""
    members = leading_pair(workers)
    assert members is not None
    follower = next(m for m in members if m["role"] == "follower")
    created = fresh(
        workers.control_url + "/api/v1/operations", method="POST",
        json={"kind": "user-reboot", "target": "web-0"},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    vms = [
        PollingVm(
            name, address, target=lambda _turn: (None, workers.imds_url),
            approve_target=lambda _rng: workers.imds_url, keep_alive=i % 2 == 0,
        )
        for i, (name, address) in enumerate(WEB.items())
    ]  # fmt: skip
    stop = threading.Event()
    threads = [threading.Thread(target=vm.run, args=(stop,), daemon=True) for vm in vms]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: all(len(vm.polls) > 5 for vm in vms), 10, "every VM served")
        os.kill(follower["pid"], signal.SIGKILL)
        killed = time.monotonic()

        def replaced() -> bool:
            now = leading_pair(workers)
            return now is not None and all(m["id"] != follower["id"] for m in now)

        wait_until(replaced, 60, "the dead worker replaced")
        served = {vm.name: len(vm.polls) for vm in vms}
        wait_until(
            lambda: all(len(vm.polls) > served[vm.name] + 5 for vm in vms), 10, "polls on"
        )  # fmt: skip
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    failures = sorted(f for vm in vms for f in vm.failures)
    assert all(at >= killed for at, _ in failures), f"failed before the kill: {failures}"
    assert all(at - killed < 2.0 for at, _ in failures), f"failed long after: {failures}"
    assert len(failures) <= len(vms), failures
    for vm in vms:  # answered again at once: within a second of the kill
        assert any(killed < p.at < killed + 1.0 for p in vm.polls), (vm.name, vm.failures)
        incarnations = [p.incarnation for p in vm.polls]
        assert incarnations == sorted(incarnations), vm.name
    assert any("is serving again" in line for line in workers.banner)
    print(f"\n{len(failures)} polls failed as the worker died: {failures}")
