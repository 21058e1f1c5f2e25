"""Freezing (SIGSTOP) and thawing (SIGCONT) front-ends of a fleet that keeps rolling.

``WatchingVm`` is a VM that asks every front-end at once, the frozen one included (one
poller per front-end: a poll sent to a frozen process waits in its kernel and is the
first thing it answers when it thaws), sending the newest ETag it has (or none, as many
clients). What it saw is checked causally (``check_documents``): an answer is never
older than one the VM had received before it sent that request (a second before, for a
VM that sends no ETag), one incarnation is one document whichever front-end served it,
and along the incarnations no event goes back (a Started event is never Scheduled again,
a removed one never comes back).

``Rollouts`` starts a platform reboot of a set whenever the last one completed, so a
freeze always lands somewhere in a rollout; ``thaw_health`` times how long a thawed
process takes to answer ``/healthz`` 200 again; ``log_problems`` holds what a process
logged to the promise that each failure is logged once (no flood, no growing traceback).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.scaleout.fleet import Fleet
from tests.scaleout.rollout import GONE, RANK, check_history

__all__ = [
    "Crowd",
    "Rollouts",
    "Seen",
    "WatchingVm",
    "check_documents",
    "log_problems",
    "rollout_history",
    "thaw_health",
]

LATEST = "2020-07-01"
PATH = "/metadata/scheduledevents"
#: How far behind another front-end one may be for a VM that sends no ETag.
LAG = 1.0


@dataclass(frozen=True)
class Seen:
    """One answer: when its request was sent and its reply came (monotonic), from whom."""

    sent: float
    received: float
    front_end: int
    incarnation: int
    events: tuple[tuple[str, str], ...]  # (EventId, EventStatus)


@dataclass
class WatchingVm:
    """A VM polling every front-end of ``urls`` at once, every ``interval`` s each; with
    ``approves``, it approves each event it is shown Scheduled, half a second later,
    through a front-end chosen at random (the frozen one too: then the approval waits)."""

    name: str
    address: str
    urls: Sequence[str]
    approves: bool = False
    etag: bool = True  # sends If-None-Match (many clients do not)
    interval: float = 0.1
    seen: list[Seen] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    approved: dict[str, float] = field(default_factory=dict)  # event id -> 200 at
    sent: dict[str, float] = field(default_factory=dict)  # event id -> its 200's POST at (wall)
    _docs: dict[int, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    _newest: int = 0
    _mine: set[str] = field(default_factory=set)  # events that list this VM
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def threads(self, stop: threading.Event) -> list[threading.Thread]:
        pollers = [
            threading.Thread(target=self._poll_loop, args=(i, stop), daemon=True)
            for i in range(len(self.urls))
        ]
        if self.approves:
            pollers.append(threading.Thread(target=self._approve_loop, args=(stop,), daemon=True))
        return pollers

    def _client(self, timeout: float) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=self.address)
        return httpx.Client(transport=transport, timeout=timeout, trust_env=False)

    def _poll_loop(self, index: int, stop: threading.Event) -> None:
        client = self._client(30)
        try:
            while not stop.is_set():
                self._poll(client, index)
                time.sleep(self.interval)
        finally:
            client.close()

    def _poll(self, client: httpx.Client, index: int) -> None:
        with self._lock:
            etag = self._newest
        headers = {"Metadata": "true"}
        if etag and self.etag:
            headers["If-None-Match"] = f'"{etag}"'
        sent = time.monotonic()
        try:
            response = client.get(
                self.urls[index] + PATH, params={"api-version": LATEST}, headers=headers
            )
        except httpx.HTTPError as exc:
            self.failures[type(exc).__name__] += 1
            return
        received = time.monotonic()
        if response.status_code == 304:
            incarnation = etag
            with self._lock:
                events = self._docs[etag]
        elif response.status_code == 200:
            doc = response.json()
            incarnation = int(doc["DocumentIncarnation"])
            events = tuple((e["EventId"], e["EventStatus"]) for e in doc["Events"])
            with self._lock:
                self._mine.update(
                    e["EventId"] for e in doc["Events"] if self.name in e["Resources"]
                )
        else:
            self.failures[f"HTTP {response.status_code}"] += 1
            return
        with self._lock:
            self._docs.setdefault(incarnation, events)
            self._newest = max(self._newest, incarnation)
            self.seen.append(Seen(sent, received, index, incarnation, events))

    def _approve_loop(self, stop: threading.Event) -> None:
        rng = random.Random(self.name)
        first_seen: dict[str, float] = {}
        client = self._client(30)
        try:
            while not stop.is_set():
                time.sleep(0.1)
                with self._lock:
                    doc = self._docs.get(self._newest, ())
                now = time.monotonic()
                for event_id, status in doc:
                    if status != "Scheduled" or event_id in self.approved:
                        continue
                    if event_id not in self._mine:
                        continue
                    if now - first_seen.setdefault(event_id, now) >= 0.5:
                        self._approve(client, rng, event_id)
        finally:
            client.close()

    def _approve(self, client: httpx.Client, rng: random.Random, event_id: str) -> None:
        body = {"StartRequests": [{"EventId": event_id}]}
        sent = time.time()
        try:
            response = client.post(
                rng.choice(self.urls) + PATH, params={"api-version": LATEST}, json=body,
                headers={"Metadata": "true"},
            )  # fmt: skip
        except httpx.HTTPError as exc:
            self.failures[f"approval {type(exc).__name__}"] += 1
            return
        if response.status_code == 200:  # "sent" as late as the answer came: a frozen
            # front-end takes it when it thaws, maybe once the event started (then moot)
            self.approved[event_id] = time.monotonic()
            self.sent[event_id] = max(sent, time.time() - 0.5)
        elif response.status_code >= 500:
            self.failures[f"approval HTTP {response.status_code}"] += 1


def check_documents(vm: WatchingVm) -> list[tuple[float, str]]:
    """What is wrong with what ``vm`` saw from every front-end, each with when it came."""
    seen = sorted(vm.seen, key=lambda s: s.received)
    if not seen:
        return [(0.0, f"saw nothing: {vm.failures}")]
    wrong: list[tuple[float, str]] = []
    docs: dict[int, tuple[tuple[str, str], ...]] = {}
    for s in seen:  # one incarnation is one document, whoever served it
        same = docs.setdefault(s.incarnation, s.events)
        if same != s.events:
            wrong.append((s.received, f"incarnation {s.incarnation} was {same} and, from "
                                      f"front-end {s.front_end}, {s.events}"))  # fmt: skip
    # The highest incarnation received before each request was sent: with an ETag, a
    # front-end behind waits to catch up; without one it cannot know what the VM saw,
    # and may be behind by its replication lag (milliseconds; LAG on a loaded machine),
    # never by the seconds a process that was stopped missed.
    lag = 0.0 if vm.etag else LAG
    newest = 0
    ahead = iter(seen)
    next_in = next(ahead, None)
    for s in sorted(vm.seen, key=lambda s: s.sent):
        while next_in is not None and next_in.received < s.sent - lag:
            newest = max(newest, next_in.incarnation)
            next_in = next(ahead, None)
        if s.incarnation < newest:
            wrong.append((s.received, (
                f"shown incarnation {newest}, then front-end {s.front_end} answered "
                f"{s.incarnation} {s.events}, {s.received - s.sent:.2f} s after it was asked"
            )))  # fmt: skip
    rank: dict[str, int] = {}  # along the incarnations, no event goes back
    for incarnation in sorted(docs):
        shown = dict(docs[incarnation])
        for event_id in rank.keys() | shown.keys():
            now = RANK[shown[event_id]] if event_id in shown else GONE
            before = rank.get(event_id, now)
            if now < before:
                at = min(s.received for s in seen if s.incarnation == incarnation)
                wrong.append((at, f"{event_id} went back at incarnation {incarnation}"))
            rank[event_id] = max(now, before)
    return wrong


class Crowd:
    """Many more VMs polling every front-end (a poller per front-end, asking for each VM
    in turn, no ETag): the bookkeeping of their scopes keeps every front-end busy, as a
    real fleet does, the moment a frozen one thaws among them."""

    def __init__(self, addresses: Sequence[str], urls: Sequence[str]) -> None:
        self.addresses = addresses
        self.urls = urls
        self.answers: Counter[str] = Counter()

    def threads(self, stop: threading.Event) -> list[threading.Thread]:
        return [
            threading.Thread(target=self._run, args=(url, stop), daemon=True) for url in self.urls
        ]

    def _run(self, url: str, stop: threading.Event) -> None:
        clients = {
            a: httpx.Client(
                transport=httpx.HTTPTransport(local_address=a), timeout=30, trust_env=False
            )
            for a in self.addresses
        }
        try:
            while not stop.is_set():
                for client in clients.values():
                    try:
                        response = client.get(
                            url + PATH, params={"api-version": LATEST}, headers={"Metadata": "true"}
                        )
                        self.answers[f"HTTP {response.status_code}"] += 1
                    except httpx.HTTPError as exc:
                        self.answers[type(exc).__name__] += 1
                    time.sleep(0.01)
        finally:
            for client in clients.values():
                client.close()


class Rollouts:
    """Platform reboots of ``target``, one after the other, each started (through any
    front-end answering) once the last one completed; until stopped."""

    def __init__(self, fleet: Fleet, target: str, frozen: set[int]) -> None:
        self.fleet = fleet
        self.target = target
        self.frozen = frozen
        self.started: list[str] = []
        self.refused: Counter[str] = Counter()
        self._client = httpx.Client(timeout=10, trust_env=False)

    def _ask(self, method: str, path: str, **kw: Any) -> httpx.Response | None:
        live = [i for i in self.fleet.alive() if i not in self.frozen]
        if not live:
            return None
        url = self.fleet.servers[random.choice(live)].control_url + path
        try:
            return self._client.request(method, url, **kw)
        except httpx.HTTPError as exc:
            self.refused[type(exc).__name__] += 1
            return None

    def _completed(self, rollout: str) -> bool:
        answer = self._ask("GET", "/api/v1/history", params={"last": 100})
        if answer is None or answer.status_code != 200:
            return False
        return any(
            h["kind"] == "rollout.completed" and h["detail"].get("id") == rollout
            for h in answer.json()
        )

    def run(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                if self.started and not self._completed(self.started[-1]):
                    time.sleep(0.3)
                    continue
                body = {"kind": "platform-reboot", "target": self.target}
                answer = self._ask("POST", "/api/v1/operations", json=body)
                if answer is not None and answer.status_code == 201:
                    self.started.append(answer.json()["rollout_id"])
                else:
                    self.refused["none" if answer is None else str(answer.status_code)] += 1
                    time.sleep(0.3)
        finally:
            self._client.close()


def rollout_history(
    history: Sequence[dict[str, Any]], operations: Sequence[dict[str, Any]], rollout: str,
    vms: Sequence[str],
) -> dict[str, str]:  # fmt: skip
    """``check_history`` of one of several rollouts (the history entries of its own
    operations and events, and its own rollout entries)."""
    mine = {op["id"] for op in operations if op["rollout_id"] == rollout}
    entries = [
        h for h in history
        if h["operation_id"] in mine
        or (h["kind"].startswith("rollout.") and h["detail"].get("id") == rollout)
    ]  # fmt: skip
    return check_history(entries, rollout, vms)


def thaw_health(url: str, thawed_at: float, limit: float) -> float | None:
    """Seconds from ``thawed_at`` until the process at control ``url`` answers
    ``/healthz`` 200 and says it follows, or leads under the epoch the database says
    leads (None: not within ``limit``)."""
    with httpx.Client(timeout=1.0, trust_env=False) as client:
        while time.monotonic() - thawed_at < limit:
            try:
                healthy = client.get(url + "/healthz").status_code == 200
                status = client.get(url + "/api/v1/cluster") if healthy else None
            except httpx.HTTPError:
                status = None
            if status is not None and status.status_code == 200:
                role = status.json()
                if role["role"] == "follower" or role["epoch"] == role["leader"]["epoch"]:
                    return time.monotonic() - thawed_at
            time.sleep(0.05)
    return None


def log_problems(lines: Sequence[str], *, max_bytes: int, max_repeats: int) -> list[str]:
    """What is wrong with a process's log: over ``max_bytes`` in all, a traceback, or one
    message (a line with its numbers taken out) more than ``max_repeats`` times."""
    problems = []
    size = sum(len(line) + 1 for line in lines)
    if size > max_bytes:
        problems.append(f"{size} bytes of log (at most {max_bytes})")
    tracebacks = sum(1 for line in lines if line.startswith("Traceback"))
    if tracebacks:
        first = next(i for i, line in enumerate(lines) if line.startswith("Traceback"))
        problems.append(f"{tracebacks} tracebacks, the first: {lines[first : first + 30]}")
    shapes = Counter(_shape(line) for line in lines)
    problems += [
        f"{count} times: {shape[:300]}" for shape, count in shapes.items() if count > max_repeats
    ]
    return problems


def _shape(line: str) -> str:
    """A log line with its digits and hex taken out (one message, whatever its values)."""
    out = []
    for word in line.split():
        if "=" in word:
            word = word.split("=", 1)[0] + "=_"
        elif any(c.isdigit() for c in word):
            word = "_"
        out.append(word)
    return " ".join(out)
