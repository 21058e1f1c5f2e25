"""A rolling platform reboot watched from the VMs, and the checks the fail-over tests
share (``test_failover.py``: separate processes; ``test_workers.py``: ``--workers``).

``PollingVm`` is one VM polling the endpoint from its own source address as the
project's client does (sending the ETag it last got), on kept-alive connections or a new
one per poll, and approving the events that list it. The checks then hold what every VM
saw, and the history, to what a fail-over promises: incarnations and statuses never go
back, every event is seen through to its end, every approval answered 200 is applied,
every VM is rebooted once and every event scheduled, started and completed once.
"""

from __future__ import annotations

import itertools
import math
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = [
    "Poll",
    "PollingVm",
    "check_approvals_applied",
    "check_history",
    "check_what_each_vm_saw",
]

LATEST = "2020-07-01"
PATH = "/metadata/scheduledevents"
#: How far along an event is, as a VM sees it: shown Scheduled, shown Started, gone.
RANK = {"Scheduled": 0, "Started": 1}
GONE = 2
#: Transitions that happen at most once per event, operation or rollout.
ONCE = frozenset({
    "event.scheduled", "event.approved", "event.started", "event.completed",
    "operation.created", "operation.started", "operation.completed",
    "rollout.created", "rollout.completed",
})  # fmt: skip


@dataclass(frozen=True)
class Poll:
    """One answer a VM got (a 304 repeats the document it had)."""

    at: float  # time.monotonic() when it came
    front_end: int | None  # which process was asked (None: an address the workers share)
    incarnation: int
    events: tuple[tuple[str, str], ...]  # (EventId, EventStatus), as listed


@dataclass
class PollingVm:
    """One VM polling ``target(turn)`` (its front-end and base URL) every ``interval`` s
    until stopped; with ``approves``, it approves each event listing it ``approve_delay``
    s after it first sees it Scheduled (at ``approve_target(rng)``), again until a 200
    comes or the event is no longer Scheduled."""

    name: str
    address: str
    target: Callable[[int], tuple[int | None, str]]
    approve_target: Callable[[random.Random], str]
    keep_alive: bool = True
    approves: bool = False
    approve_delay: float = 0.0
    interval: float = 0.05
    polls: list[Poll] = field(default_factory=list)
    failures: list[tuple[float, str]] = field(default_factory=list)  # (monotonic, what)
    approved: dict[str, float] = field(default_factory=dict)  # event id -> 200 at
    sent: dict[str, float] = field(default_factory=dict)  # event id -> its 200's POST at (wall)
    refused: Counter[str] = field(default_factory=Counter)  # approvals not answered 200
    resources: dict[str, tuple[str, ...]] = field(default_factory=dict)  # event id -> VMs

    def run(self, stop: threading.Event) -> None:
        clients: dict[int | None, httpx.Client] = {}
        rng = random.Random(self.name)
        due: dict[str, float] = {}  # approvals to send, and when
        try:
            for turn in itertools.count():
                if stop.is_set():
                    return
                front_end, base = self.target(turn)
                self._poll(clients, front_end, base)
                if self.approves and self.polls:
                    self._approve_due(self.polls[-1], due, rng)
                time.sleep(self.interval)
        finally:
            for client in clients.values():
                client.close()

    def _client(self) -> httpx.Client:
        """A client from this VM's address (one per front-end, kept for its polls)."""
        transport = httpx.HTTPTransport(local_address=self.address)
        return httpx.Client(transport=transport, timeout=10, trust_env=False)

    def _poll(
        self, clients: dict[int | None, httpx.Client], front_end: int | None, base: str
    ) -> None:
        headers = {"Metadata": "true"}
        if not self.keep_alive:  # a new connection each time (cheaper than a new client)
            headers["Connection"] = "close"
        last = self.polls[-1] if self.polls else None
        if last is not None:
            headers["If-None-Match"] = f'"{last.incarnation}"'
        client = clients.get(front_end) or clients.setdefault(front_end, self._client())
        try:
            response = client.get(base + PATH, params={"api-version": LATEST}, headers=headers)
        except httpx.HTTPError as exc:  # a front-end being killed
            self.failures.append((time.monotonic(), type(exc).__name__))
            clients.pop(front_end).close()
            return
        at = time.monotonic()
        if response.status_code == 304 and last is not None:
            self.polls.append(Poll(at, front_end, last.incarnation, last.events))
        elif response.status_code == 200:
            doc = response.json()
            events = tuple((e["EventId"], e["EventStatus"]) for e in doc["Events"])
            self.resources.update((e["EventId"], tuple(e["Resources"])) for e in doc["Events"])
            self.polls.append(Poll(at, front_end, doc["DocumentIncarnation"], events))
        else:
            self.failures.append((at, f"HTTP {response.status_code}"))

    def _approve_due(self, poll: Poll, due: dict[str, float], rng: random.Random) -> None:
        scheduled = {event_id for event_id, status in poll.events if status == "Scheduled"}
        for event_id in list(due):
            if event_id not in scheduled:  # started, or gone: nothing left to approve
                del due[event_id]
        now = time.monotonic()
        for event_id in scheduled - set(due) - set(self.approved):
            if self.name in self.resources.get(event_id, ()):
                due[event_id] = now + self.approve_delay
        for event_id, when in list(due.items()):
            if when <= now and self._approve(event_id, rng):
                del due[event_id]

    def _approve(self, event_id: str, rng: random.Random) -> bool:
        body = {"StartRequests": [{"EventId": event_id}]}
        sent = time.time()
        try:
            with self._client() as client:
                response = client.post(
                    self.approve_target(rng) + PATH, params={"api-version": LATEST}, json=body,
                    headers={"Metadata": "true"},
                )  # fmt: skip
        except httpx.HTTPError as exc:
            self.refused[type(exc).__name__] += 1
            return False
        if response.status_code != 200:  # 503 while the leadership changes, say
            self.refused[f"HTTP {response.status_code}"] += 1
            return False
        self.approved[event_id] = time.monotonic()
        self.sent[event_id] = sent
        return True


def check_what_each_vm_saw(vms: Sequence[PollingVm], events: Collection[str]) -> None:
    """Per VM, over every answer from whichever front-end: incarnations never go back,
    one incarnation is always the same document, no event is listed twice, no event goes
    back (Scheduled, Started, gone; never shown again once gone), and every event of
    ``events`` is seen live and then seen gone."""
    for vm in vms:
        assert vm.polls, f"{vm.name} saw nothing: {vm.failures[:5]}"
        incarnations = [p.incarnation for p in vm.polls]
        assert incarnations == sorted(incarnations), f"{vm.name} saw an incarnation go back"
        documents: dict[int, tuple[tuple[str, str], ...]] = {}
        rank: dict[str, int] = {}
        for poll in vm.polls:
            same = documents.setdefault(poll.incarnation, poll.events)
            assert same == poll.events, f"{vm.name}: incarnation {poll.incarnation} differs"
            shown = dict(poll.events)
            assert len(shown) == len(poll.events), f"{vm.name}: an event listed twice {poll}"
            for event_id in rank.keys() | shown.keys():
                now = RANK[shown[event_id]] if event_id in shown else GONE
                before = rank.get(event_id, now)
                assert now >= before, f"{vm.name}: {event_id} went back ({before} -> {now})"
                rank[event_id] = now
        for event_id in events:
            assert event_id in rank, f"{vm.name} never saw {event_id}"
            assert rank[event_id] == GONE, f"{vm.name} did not see {event_id} end"


def check_approvals_applied(
    vms: Iterable[PollingVm], history: Sequence[dict[str, Any]], *, moot_within: float = 0.0
) -> None:
    """Every approval answered 200 is in the history: the event approved by that VM.

    ``moot_within`` (a fleet on the wall clock): but for an approval sent less than that
    before its event started at its NotBefore, or after: a follower relays an approval
    to the leader in milliseconds (more on a loaded machine), and may show an event
    Scheduled a little past its NotBefore; one that reaches the leader once the event
    started changes nothing. It covers that lag only: an approval a follower recorded
    before the NotBefore is applied before the leader fires it
    (``test_replication.py::test_an_approval_a_follower_recorded_before_the_not_before_is_applied_before_it``)."""
    approved_by = {h["event_id"]: h["detail"].get("by") for h in history
                   if h["kind"] == "event.approved"}  # fmt: skip
    started = {h["event_id"]: h["at"] for h in history if h["kind"] == "event.started"
               and h["detail"].get("reason") == "not_before"}  # fmt: skip
    for vm in vms:
        for event_id in vm.approved:
            sent = vm.sent[event_id]
            if started.get(event_id, math.inf) <= sent + moot_within:
                continue
            assert approved_by.get(event_id) == vm.name, (
                f"{vm.name}'s approval of {event_id} was answered 200 but not applied "
                f"(approved by {approved_by.get(event_id)!r}; sent at {sent:.3f}: "
                f"{[(h['kind'], h['at']) for h in history if h['event_id'] == event_id]})"
            )


def check_history(
    history: Sequence[dict[str, Any]], rollout: str, vms: Collection[str]
) -> dict[str, str]:
    """The history of ``rollout`` on ``vms``: every VM rebooted exactly once, every event
    scheduled, started, completed exactly once (approved at most once), no transition
    twice, no operation started before its NotBefore unless every event of it was
    approved, every operation completed, the rollout completed once. Returns each
    event's operation."""
    seqs = [h["seq"] for h in history]
    assert seqs == sorted(set(seqs)), "history entries out of order or repeated"
    transitions = Counter(
        (h["kind"], h["operation_id"], h["event_id"], h["detail"].get("id"))
        for h in history if h["kind"] in ONCE
    )  # fmt: skip
    twice = [key for key, count in transitions.items() if count > 1]
    assert not twice, f"transitions recorded twice: {twice}"
    ops = {h["operation_id"]: h for h in history if h["kind"] == "operation.created"}
    rebooted = Counter(vm for op in ops.values() for vm in op["detail"]["vms"])
    assert rebooted == Counter(vms), "every VM rebooted exactly once"
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
    for op_id, created in ops.items():
        starts = [
            h for h in history if h["kind"] == "operation.started" and h["operation_id"] == op_id
        ]
        assert len(starts) == 1, f"{op_id} started {len(starts)} times"
        start = starts[0]
        if start["at"] < created["detail"]["not_before"]:
            assert start["detail"]["reason"] == "approved", start
            events = [e for e, o in event_op.items() if o == op_id]
            approved = {
                h["event_id"] for h in history
                if h["kind"] == "event.approved" and h["seq"] < start["seq"]
            }  # fmt: skip
            assert set(events) <= approved, f"{op_id} started early without every approval"
        assert any(
            h["kind"] == "operation.completed" and h["operation_id"] == op_id for h in history
        ), f"{op_id} never completed"
    completed = [
        h for h in history if h["kind"] == "rollout.completed" and h["detail"].get("id") == rollout
    ]
    assert len(completed) == 1, f"rollout {rollout} completed {len(completed)} times"
    return event_op
