"""SIGKILL the leader in the middle of a rolling reboot: another process finishes it.

Three real processes on a real clock (time scale 300: 3 s notice, 2 s reboots). The six
VMs of availability set "web" poll the front-ends in turn, each sending the ETag it last
saw, and every other VM approves its events through whichever front-end it reaches. The
leader is killed once the rollout's second batch is scheduled. Then, from the history in
the database and from what each VM saw:

- another process leads within a few seconds, and the rollout completes;
- every VM is rebooted exactly once, every event goes scheduled → started → completed
  exactly once (none duplicated, none lost);
- no operation starts before its NotBefore unless every one of its events was approved;
- the incarnation each VM saw never went down, whichever front-end answered.
"""

from __future__ import annotations

import itertools
import random
import signal
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.scaleout.fleet import Fleet
from tests.support.marks import SLOW
from tests.support.waiting import wait_until

pytestmark = SLOW

WEB = {f"web-{i}": f"127.1.0.{i + 1}" for i in range(6)}
APPROVERS = {"web-0", "web-2", "web-4"}
ARGS = ("--clock", "real", "--time-scale", "300", "--rate-limit", "0", "--enablement", "always")


@dataclass
class Vm:
    """One VM polling the fleet's front-ends in turn, as a client sending ETags does."""

    name: str
    address: str
    fleet: Fleet
    seen: list[tuple[int, int]] = field(default_factory=list)  # (front-end, incarnation)
    approved: set[str] = field(default_factory=set)
    errors: Counter[str] = field(default_factory=Counter)

    def run(self, stop: threading.Event) -> None:
        clients: dict[int, httpx.Client] = {}
        rng = random.Random(self.name)
        etag: int | None = None
        try:
            for turn in itertools.count():
                if stop.is_set():
                    return
                alive = self.fleet.alive()
                index = alive[turn % len(alive)]
                client = clients.setdefault(index, self._client())
                headers = {"Metadata": "true"}
                if etag is not None:
                    headers["If-None-Match"] = f'"{etag}"'
                url = self.fleet.servers[index].imds_url + "/metadata/scheduledevents"
                try:
                    response = client.get(
                        url, params={"api-version": "2020-07-01"}, headers=headers
                    )
                except httpx.HTTPError as exc:  # a front-end being killed
                    self.errors[type(exc).__name__] += 1
                    clients.pop(index).close()
                    continue
                if response.status_code == 304:
                    assert etag is not None
                    self.seen.append((index, etag))
                elif response.status_code == 200:
                    doc = response.json()
                    etag = doc["DocumentIncarnation"]
                    self.seen.append((index, doc["DocumentIncarnation"]))
                    if self.name in APPROVERS:
                        self._approve(doc, rng)
                else:
                    self.errors[f"HTTP {response.status_code}"] += 1
                time.sleep(0.05)
        finally:
            for client in clients.values():
                client.close()

    def _client(self) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=self.address)
        return httpx.Client(transport=transport, timeout=10, trust_env=False)

    def _approve(self, doc: dict[str, Any], rng: random.Random) -> None:
        for event in doc["Events"]:
            mine = self.name in event["Resources"]
            if not mine or event["EventStatus"] != "Scheduled" or event["EventId"] in self.approved:
                continue
            alive = self.fleet.alive()
            index = rng.choice(alive)
            url = self.fleet.servers[index].imds_url + "/metadata/scheduledevents"
            body = {"StartRequests": [{"EventId": event["EventId"]}]}
            try:
                with self._client() as client:
                    response = client.post(
                        url, params={"api-version": "2020-07-01"}, json=body,
                        headers={"Metadata": "true"},
                    )  # fmt: skip
            except httpx.HTTPError as exc:
                self.errors[f"approve {type(exc).__name__}"] += 1
                continue
            if response.status_code == 200:
                self.approved.add(event["EventId"])
            else:  # the event may have started meanwhile
                self.errors[f"approve HTTP {response.status_code}"] += 1


def _history(fleet: Fleet, index: int) -> list[dict[str, Any]]:
    response = fleet.control(index, "GET", "/api/v1/history", params={"limit": 10000})
    assert response.status_code == 200, response.text
    entries: list[dict[str, Any]] = response.json()
    return entries


def test_the_leader_dies_mid_rollout_and_another_process_finishes_it(
    start_fleet: Any,
) -> None:
    fleet: Fleet = start_fleet(3, ARGS)
    leader = fleet.wait_for_leader()
    old_epoch = fleet.cluster(leader)["epoch"]
    stop = threading.Event()
    vms = [Vm(name, address, fleet) for name, address in WEB.items()]
    threads = [threading.Thread(target=vm.run, args=(stop,), daemon=True) for vm in vms]
    for thread in threads:
        thread.start()
    try:
        created = fleet.control(
            fleet.followers()[0], "POST", "/api/v1/operations",
            json={"kind": "platform-reboot", "target": "web"},
        )  # fmt: skip
        assert created.status_code == 201, created.text
        rollout = created.json()["rollout_id"]

        def batches_created() -> int:
            ops = fleet.control(leader, "GET", "/api/v1/operations").json()
            return sum(1 for op in ops if op["rollout_id"] == rollout)

        wait_until(lambda: batches_created() >= 2, 30, "the second batch")
        killed_at = time.monotonic()
        fleet.servers[leader].kill(signal.SIGKILL)
        survivor = fleet.wait_for_leader(timeout=30)
        takeover = time.monotonic() - killed_at
        assert survivor != leader
        assert takeover < 10, f"took {takeover:.1f} s to elect a new leader"
        assert fleet.cluster(survivor)["epoch"] == old_epoch + 1

        def rollout_done() -> bool:
            return any(
                h["kind"] == "rollout.completed" and h["detail"].get("id") == rollout
                for h in _history(fleet, survivor)
            )

        wait_until(rollout_done, 60, "the rollout to complete", interval=0.5)
        time.sleep(1.0)  # the VMs see the last removal
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)

    history = _history(fleet, survivor)
    ops = {h["operation_id"]: h for h in history if h["kind"] == "operation.created"}
    rebooted = Counter(vm for op in ops.values() for vm in op["detail"]["vms"])
    assert rebooted == Counter(WEB.keys()), "every VM rebooted exactly once"
    per_event: dict[str, list[str]] = defaultdict(list)
    event_op: dict[str, str] = {}
    for h in history:
        if h["event_id"] is not None:
            per_event[h["event_id"]].append(h["kind"])
            event_op[h["event_id"]] = h["operation_id"]
    for event_id, kinds in per_event.items():
        lifecycle = [k for k in kinds if k != "event.approved"]
        assert lifecycle == ["event.scheduled", "event.started", "event.completed"], event_id
        assert kinds.count("event.approved") <= 1, f"{event_id} approved twice"
    for op_id, created_entry in ops.items():
        starts = [
            h for h in history if h["kind"] == "operation.started" and h["operation_id"] == op_id
        ]
        assert len(starts) == 1, f"{op_id} started {len(starts)} times"
        start = starts[0]
        if start["at"] < created_entry["detail"]["not_before"]:
            assert start["detail"]["reason"] == "approved", start
            events = [e for e, o in event_op.items() if o == op_id]
            approved = {
                h["event_id"] for h in history
                if h["kind"] == "event.approved" and h["seq"] < start["seq"]
            }  # fmt: skip
            assert set(events) <= approved, f"{op_id} started early without every approval"
        assert any(
            h["kind"] == "operation.completed" and h["operation_id"] == op_id for h in history
        )
    for vm in vms:
        incarnations = [inc for _, inc in vm.seen]
        assert incarnations, f"{vm.name} saw nothing: {vm.errors}"
        assert incarnations == sorted(incarnations), f"{vm.name} saw an incarnation go back"
        assert len({index for index, _ in vm.seen}) >= 2, f"{vm.name} used one front-end only"
    assert any(vm.approved for vm in vms), {vm.name: vm.errors for vm in vms}
