"""``forewarn serve --workers 2``: two processes on the same ports, one of them leading;
the leading one SIGKILLed when idle, and in the middle of a rolling reboot."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scaleout.conftest import VIRTUAL
from tests.scaleout.pg import PgDatabase
from tests.scaleout.rollout import (
    PollingVm,
    check_approvals_applied,
    check_history,
    check_what_each_vm_saw,
)
from tests.scaleout.workers import fresh, leading_pair, listed_members
from tests.support.marks import SLOW
from tests.support.serverproc import ServerProcess
from tests.support.waiting import wait_until

pytestmark = SLOW


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _two_workers(pg: PgDatabase, tmp_path: Path, *args: str) -> Iterator[ServerProcess]:
    """``forewarn serve --workers 2`` on ``pg`` (the SQLite path is never used)."""
    server = ServerProcess(tmp_path / "unused.db", ["--store", pg.url, "--workers", "2", *args])
    server.start(timeout=90)
    yield server
    server.stop()


@pytest.fixture
def workers(pg: PgDatabase, tmp_path: Path) -> Iterator[ServerProcess]:
    yield from _two_workers(pg, tmp_path, *VIRTUAL)


def test_workers_share_the_ports_and_the_fleet_and_survive_losing_the_leader(
    workers: ServerProcess,
) -> None:
    cluster_url = workers.control_url + "/api/v1/cluster"

    def members() -> list[dict[str, Any]] | None:
        try:
            data = fresh(cluster_url).json()
        except httpx.HTTPError:  # a connection the killed worker had accepted: reset
            return None
        roles = sorted(m["role"] for m in data["members"])
        return data["members"] if roles == ["follower", "leader"] else None

    listed = wait_until(members, 30, "two workers, one leading")
    answered_by = {fresh(cluster_url).json()["member"] for _ in range(40)}
    assert answered_by == {m["id"] for m in listed}  # connections reach both workers
    created = fresh(
        workers.control_url + "/api/v1/operations",
        method="POST",
        json={"kind": "user-reboot", "target": "web-0"},
    )
    assert created.status_code == 201, created.text
    event_id = created.json()["event_ids"][0]
    endpoint = workers.imds_url + "/metadata/scheduledevents"
    docs = [
        fresh(endpoint, params={"api-version": "2020-07-01"}, headers={"Metadata": "true"})
        for _ in range(20)
    ]
    assert all(d.status_code == 200 for d in docs)

    def everywhere() -> bool:
        params, headers = {"api-version": "2020-07-01"}, {"Metadata": "true"}
        seen = [fresh(endpoint, params=params, headers=headers).json() for _ in range(10)]
        return all([e["EventId"] for e in doc["Events"]] == [event_id] for doc in seen)

    wait_until(everywhere, 10, "the event on every worker")
    leader = next(m for m in listed if m["role"] == "leader")
    os.kill(leader["pid"], signal.SIGKILL)

    def healed() -> list[dict[str, Any]] | None:
        now = members()
        return now if now and all(m["id"] != leader["id"] for m in now) else None

    now = wait_until(healed, 60, "a new leader and the dead worker replaced")
    assert any("is serving again" in line for line in workers.banner)
    approved = fresh(
        workers.control_url + f"/api/v1/events/{event_id}/approve", method="POST", json={}
    )
    assert approved.status_code == 200 and approved.json()["status"] == "Started"
    pids = [m["pid"] for m in now]
    workers.stop()
    assert not any(_alive(pid) for pid in pids)


# ---------------------------------------------------------------- mid-rollout

#: One availability set over four update domains, each VM on a host of its own: four
#: batches of three VMs, each batch three events (one per host).
ROLLING_FLEET = """\
hosts: 12
scopes:
  - kind: availability_set
    name: web
    update_domains: 4
    fault_domains: 2
    vms: 12
"""
WEB = {f"web-{i}": f"127.1.0.{i + 1}" for i in range(12)}
#: The VMs of the last update domain approve nothing: their batch starts at NotBefore.
LAST_DOMAIN = {"web-3", "web-7", "web-11"}
NOTICE, HOLD = 15 * 60.0, 10 * 60.0  # a platform reboot's notice, and how long it shows
#: The clock may move this much while the second batch waits for its approvals.
DRIFT = 200.0
#: Polls may fail for this long after the kill (those the dead worker held, or that
#: the kernel gave it as it died), never before.
FAILURE_WINDOW = 2.0


def _control(workers: ServerProcess, method: str, path: str, **kw: Any) -> Any:
    """A control call on the shared port (a new connection: either worker), repeated
    while the leadership changes (reset, or 503); the JSON answer."""

    def attempt() -> httpx.Response | None:
        try:
            response = fresh(workers.control_url + path, method=method, **kw)
        except httpx.HTTPError:
            return None
        return None if response.status_code == 503 else response

    response = wait_until(attempt, 30, f"{method} {path}", interval=0.1)
    assert response.status_code < 300, response.text
    return response.json()


class _Clock:
    """Moves the virtual clock one second at a time through either worker, as a drill
    would, until stopped (at most ``DRIFT`` s); remembers every time acknowledged."""

    def __init__(self, workers: ServerProcess) -> None:
        self.url = workers.control_url + "/api/v1/clock/advance"
        self.acknowledged: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=10, trust_env=False) as client:
            while not self.stop.is_set() and len(self.acknowledged) < DRIFT:
                try:  # a new connection each time: either worker
                    response = client.post(
                        self.url, json={"seconds": 1}, headers={"Connection": "close"}
                    )
                except httpx.HTTPError:
                    continue
                if response.status_code == 200:
                    self.acknowledged.append(response.json()["now"])
                time.sleep(0.02)

    def __enter__(self) -> _Clock:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


@dataclass
class _Failover:
    """When the leading worker was killed, and when the fleet healed."""

    killed: dict[str, Any]  # the member, as /api/v1/cluster listed it
    at: float  # time.monotonic() of the kill
    new_leader: float = 0.0  # when another worker led
    replaced: list[float] = field(default_factory=list)  # when a new worker joined
    clock: list[float] = field(default_factory=list)  # virtual times acknowledged meanwhile

    def watch_for_the_new_worker(self, workers: ServerProcess) -> threading.Thread:
        """Note when the dead worker is replaced (while the rollout goes on)."""

        def watch() -> None:
            deadline = time.monotonic() + 90
            while not self.replaced and time.monotonic() < deadline:
                if (at := _replaced(workers, self.killed)) is not None:
                    self.replaced.append(at)
                time.sleep(0.1)

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread


def _kill_mid_batch(workers: ServerProcess, vms: list[PollingVm], op: dict[str, Any]) -> _Failover:
    """With the clock moving and the VMs approving ``op``'s events: SIGKILL the leading
    worker as soon as the first approval is answered; return once the batch started."""
    members = leading_pair(workers)
    assert members is not None
    leader = next(m for m in members if m["role"] == "leader")
    events = op["event_ids"]
    with _Clock(workers) as clock:
        wait_until(
            lambda: any(e in vm.approved for vm in vms for e in events), 10, "an approval",
            interval=0.005,
        )  # fmt: skip
        os.kill(leader["pid"], signal.SIGKILL)
        failover = _Failover(leader, time.monotonic())
        failover.new_leader = wait_until(lambda: _led_by_another(workers, leader), 30, "a leader")
        wait_until(lambda: _state(workers, op["id"]) == "started", 30, "the batch approved")
    failover.clock = clock.acknowledged
    return failover


def _led_by_another(workers: ServerProcess, killed: dict[str, Any]) -> float | None:
    """When the leader row names a worker other than ``killed`` (None until then)."""
    try:
        response = fresh(workers.control_url + "/api/v1/cluster")
    except httpx.HTTPError:
        return None
    holder = response.json()["leader"]["member"] if response.status_code == 200 else None
    return time.monotonic() if holder not in (None, killed["id"]) else None


def _replaced(workers: ServerProcess, killed: dict[str, Any]) -> float | None:
    """When two workers other than ``killed`` report, one of them leading (the dead one
    stays listed until its last report is 10 s old)."""
    members = listed_members(workers)
    if members is None:
        return None
    others = [m for m in members if m["id"] != killed["id"]]
    roles = sorted(m["role"] for m in others)
    return time.monotonic() if roles == ["follower", "leader"] else None


def _state(workers: ServerProcess, operation_id: str) -> str:
    operation: dict[str, Any] = _control(workers, "GET", f"/api/v1/operations/{operation_id}")
    return str(operation["state"])


def _vm(index: int, name: str, address: str, endpoint: str) -> PollingVm:
    """Even VMs keep their connection, odd ones open one per poll (the kernel picks a
    worker for each). A batch's three VMs approve 0, 0.4 and 0.8 s after they see it (the
    leader is killed after the first), the last update domain's approve nothing."""
    return PollingVm(
        name,
        address,
        target=lambda _turn: (None, endpoint),
        approve_target=lambda _rng: endpoint,
        keep_alive=index % 2 == 0,
        approves=name not in LAST_DOMAIN,
        approve_delay=0.4 * (index // 4),
    )


@pytest.fixture
def rolling_workers(pg: PgDatabase, tmp_path: Path) -> Iterator[ServerProcess]:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(ROLLING_FLEET)
    yield from _two_workers(pg, tmp_path, "--fleet", str(fleet), *VIRTUAL)


def test_the_leading_worker_dies_mid_rollout_and_the_vms_hardly_notice(
    rolling_workers: ServerProcess,
) -> None:
    """Twelve VMs poll the workers' one endpoint (each sending its ETag) while a platform
    reboot rolls over four update domains on a virtual clock. The first three batches
    start when their VMs approve (the clock stands still, but for the second batch's
    drift), the last at its NotBefore. In the second batch, once one approval is
    answered, with the clock moving and more approvals due, the leading worker is
    SIGKILLed."""
    workers = rolling_workers
    wait_until(lambda: leading_pair(workers), 30, "two workers, one leading")
    vms = [_vm(i, name, address, workers.imds_url) for i, (name, address) in enumerate(WEB.items())]
    stop = threading.Event()
    threads = [threading.Thread(target=vm.run, args=(stop,), daemon=True) for vm in vms]
    for thread in threads:
        thread.start()

    def batch(number: int) -> list[dict[str, Any]]:
        ops: list[dict[str, Any]] = _control(workers, "GET", "/api/v1/operations")
        mine = sorted((o for o in ops if o["rollout_id"] == rollout), key=lambda o: o["created_at"])
        return mine[number : number + 1]

    def every_vm_sees(event_ids: list[str], statuses: set[str | None]) -> bool:
        for vm in vms:
            shown = dict(vm.polls[-1].events) if vm.polls else {}
            if any(shown.get(event_id) not in statuses for event_id in event_ids):
                return False
        return True

    try:
        created = _control(
            workers, "POST", "/api/v1/operations",
            json={"kind": "platform-reboot", "target": "web"},
        )  # fmt: skip
        rollout = created["rollout_id"]
        for number in range(4):
            (op,) = wait_until(lambda n=number: batch(n), 30, f"batch {number + 1}")
            events = op["event_ids"]
            wait_until(lambda e=events: every_vm_sees(e, {"Scheduled", "Started"}), 10, "shown")
            if number == 1:
                failover = _kill_mid_batch(workers, vms, op)
                watcher = failover.watch_for_the_new_worker(workers)
            elif number == 3:
                assert set(op["vms"]) == LAST_DOMAIN, op
                _control(workers, "POST", "/api/v1/clock/advance", json={"seconds": NOTICE})
            else:
                wait_until(lambda i=op["id"]: _state(workers, i) == "started", 30, "approved")
            wait_until(lambda e=events: every_vm_sees(e, {"Started"}), 10, "Started everywhere")
            _control(workers, "POST", "/api/v1/clock/advance", json={"seconds": HOLD})
            wait_until(lambda e=events: every_vm_sees(e, {None}), 10, "the batch gone")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)

    watcher.join(timeout=90)
    assert failover.replaced, "the dead worker was not replaced within 90 s"
    failures = sorted(f for vm in vms for f in vm.failures)
    window = (failures[-1][0] - failover.at) if failures else 0.0
    polls = sum(len(vm.polls) for vm in vms)
    refused = sum((vm.refused for vm in vms), Counter[str]())
    print(
        f"\nnew leader after {failover.new_leader - failover.at:.2f} s, worker replaced after "
        f"{failover.replaced[0] - failover.at:.1f} s; {len(failures)} of "
        f"{polls + len(failures)} polls failed, the last {window:.2f} s after the kill; "
        f"approvals not answered 200: {dict(refused)}; answered at (s after the kill): "
        f"{sorted(round(at - failover.at, 2) for vm in vms for at in vm.approved.values())}"
    )
    assert failover.new_leader - failover.at < 10, "no new leader within 10 s"
    assert any("is serving again" in line for line in workers.banner)
    assert all(at >= failover.at for at, _ in failures), f"failed before the kill: {failures}"
    assert window < FAILURE_WINDOW, f"polls failed for {window:.1f} s: {failures}"
    assert len(failures) <= len(vms), f"{len(failures)} polls failed: {failures}"

    history = _control(workers, "GET", "/api/v1/history", params={"limit": 10000})
    event_op = check_history(history, rollout, WEB.keys())
    check_what_each_vm_saw(vms, event_op.keys())
    check_approvals_applied(vms, history)
    resources = {h["event_id"]: h["detail"]["resources"] for h in history
                 if h["kind"] == "event.scheduled"}  # fmt: skip
    approved_by = {h["event_id"]: h["detail"]["by"] for h in history
                   if h["kind"] == "event.approved"}  # fmt: skip
    assert all(resources[e] == [by] for e, by in approved_by.items()), approved_by
    last = {e for e, o in event_op.items() if o == op["id"]}
    assert set(approved_by) == set(event_op) - last, "batches 1-3 approved, the last not"
    assert failover.clock, "the clock never moved during the fail-over"
    for _ in range(10):  # either worker: never before a time it acknowledged
        assert _control(workers, "GET", "/api/v1/clock")["now"] >= max(failover.clock)
