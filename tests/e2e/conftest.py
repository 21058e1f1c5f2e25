"""Fixtures and helpers of the end-to-end tests.

Every test starts ``forewarn serve`` as a real process (``tests/support/serverproc.py``) and
looks at it only from the outside: each VM's document over the metadata endpoint (from
the VM's own loopback address) and the control API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from email.utils import formatdate
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.serverproc import ServerProcess

LATEST = "2020-07-01"
MINUTE = 60.0

#: Durations of the catalogue at time scale 1 (seconds).
REBOOT_NOTICE = 15 * MINUTE
REBOOT_HOLD = 10 * MINUTE
FREEZE_NOTICE = 15 * MINUTE
FREEZE_HOLD = 5 * MINUTE
SPOT_NOTICE = 30.0
SPOT_HOLD = MINUTE

#: Server options: a virtual clock, no rate limit (the tests poll), or scaled real time.
VIRTUAL = ("--clock", "virtual", "--rate-limit", "0")
REAL_FAST = ("--clock", "real", "--time-scale", "600", "--rate-limit", "0")
TIME_SCALE = 600.0

#: The demo fleet: VM -> (scope, host, update domain, source address).
DEMO: dict[str, tuple[str, str, int, str]] = {
    "web-0": ("web", "host-1", 0, "127.1.0.1"),
    "web-1": ("web", "host-2", 1, "127.1.0.2"),
    "web-2": ("web", "host-3", 2, "127.1.0.3"),
    "web-3": ("web", "host-4", 0, "127.1.0.4"),
    "web-4": ("web", "host-2", 1, "127.1.0.5"),
    "web-5": ("web", "host-3", 2, "127.1.0.6"),
    "workers_0": ("workers", "host-4", 0, "127.1.0.7"),
    "workers_1": ("workers", "host-1", 1, "127.1.0.8"),
    "workers_2": ("workers", "host-2", 0, "127.1.0.9"),
    "workers_3": ("workers", "host-3", 1, "127.1.0.10"),
    "jumpbox": ("jumpbox", "host-4", 0, "127.1.0.11"),
    "FrontEnd_IN_0": ("shop", "host-1", 0, "127.1.0.12"),
    "FrontEnd_IN_1": ("shop", "host-2", 1, "127.1.0.13"),
    "BackEnd_IN_0": ("shop", "host-3", 0, "127.1.0.14"),
}
SCOPES: dict[str, list[str]] = {}
for _name, (_scope, *_rest) in DEMO.items():
    SCOPES.setdefault(_scope, []).append(_name)


def scope_of(vm: str) -> str:
    return DEMO[vm][0]


def address(vm: str) -> str:
    return DEMO[vm][3]


def rfc1123(epoch: float) -> str:
    """NotBefore as the endpoint writes it (fractions of a second dropped)."""
    return formatdate(int(epoch), usegmt=True)


def statuses(doc: dict[str, Any]) -> dict[str, str]:
    """EventId -> EventStatus of a document."""
    return {e["EventId"]: e["EventStatus"] for e in doc["Events"]}


class Platform:
    """A running server seen from outside, with the incarnation rule checked on the way.

    ``observe`` reads documents and asserts, per scope, that the incarnation went up
    exactly when the visible events changed since the previous observation.
    """

    def __init__(self, server: ServerProcess, seen: dict[str, tuple[int, Any]] | None = None):
        self.server = server
        #: scope -> (incarnation, events) at the last observation (2020-07-01 documents).
        self.seen: dict[str, tuple[int, Any]] = {} if seen is None else seen
        # Kept-alive clients: a new httpx client per request costs ~20 ms. Every request is
        # declared JSON: the control API refuses state changes that are not (cross-site rule).
        self.control_client = httpx.Client(
            base_url=server.control_url,
            headers={"Content-Type": "application/json"},
            timeout=10,
            trust_env=False,
        )
        self._imds: dict[str, httpx.Client] = {}

    def close(self) -> None:
        for client in [self.control_client, *self._imds.values()]:
            client.close()

    def imds_client(self, vm: str) -> httpx.Client:
        """A kept-alive client of the endpoint whose requests come from ``vm``'s address."""
        client = self._imds.get(vm)
        if client is None:
            transport = httpx.HTTPTransport(local_address=address(vm))
            client = httpx.Client(
                base_url=self.server.imds_url, transport=transport, timeout=10, trust_env=False
            )
            self._imds[vm] = client
        return client

    def imds(
        self,
        method: str,
        vm: str,
        api_version: str | None = LATEST,
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> httpx.Response:
        """Call the endpoint from ``vm``'s source address."""
        params = {"api-version": api_version} if api_version else {}
        hdrs = {"Metadata": "true", **(headers or {})}
        return self.imds_client(vm).request(
            method, "/metadata/scheduledevents", params=params, headers=hdrs, **kw
        )

    # ------------------------------------------------------------ endpoint

    def get(self, vm: str, api_version: str | None = LATEST, **kw: Any) -> httpx.Response:
        return self.imds("GET", vm, api_version, **kw)

    def doc(self, vm: str, api_version: str = LATEST) -> dict[str, Any]:
        """The document ``vm`` sees (200 expected; the ETag is the incarnation)."""
        response = self.get(vm, api_version)
        assert response.status_code == 200, (vm, response.status_code, response.text)
        body: dict[str, Any] = response.json()
        assert response.headers["etag"] == f'"{body["DocumentIncarnation"]}"'
        return body

    def raw(self, vm: str, api_version: str = LATEST) -> tuple[int, bytes]:
        response = self.get(vm, api_version)
        return response.status_code, response.content

    def raw_all(self) -> dict[str, tuple[int, bytes]]:
        """Status and exact bytes of every VM's document."""
        return {vm: self.raw(vm) for vm in DEMO}

    def approve(self, vm: str, *ids: str, expect: int = 200) -> httpx.Response:
        """POST StartRequests from ``vm``'s address."""
        body = {"StartRequests": [{"EventId": i} for i in ids]}
        response = self.imds("POST", vm, json=body)
        assert response.status_code == expect, (vm, response.status_code, response.text)
        return response

    def enable(self, *vms: str) -> None:
        """One request from each VM: switches its scope's Scheduled Events on."""
        for vm in vms:
            self.doc(vm)

    # ------------------------------------------------------------ control API

    def call(self, method: str, path: str, expect: int | None = 200, **kw: Any) -> Any:
        response = self.control_client.request(method, path, **kw)
        if expect is not None:
            assert response.status_code == expect, (method, path, response.text)
        return response.json()

    def trigger(self, kind: str, target: str, **fields: Any) -> dict[str, Any]:
        """Create an operation; returns it (201 expected)."""
        body = {"kind": kind, "target": target, **fields}
        op: dict[str, Any] = self.call("POST", "/api/v1/operations", expect=201, json=body)
        return op

    def advance(self, seconds: float) -> float:
        now: float = self.call("POST", "/api/v1/clock/advance", json={"seconds": seconds})["now"]
        return now

    def now(self) -> float:
        now: float = self.call("GET", "/api/v1/clock")["now"]
        return now

    def advance_to(self, instant: float, past: float = 0.0) -> float:
        """Advance the virtual clock to ``instant + past`` (never backwards)."""
        return self.advance(max(0.0, instant + past - self.now()))

    def events(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.call("GET", "/api/v1/events")
        return events

    def event(self, event_id: str) -> dict[str, Any]:
        event: dict[str, Any] = self.call("GET", f"/api/v1/events/{event_id}")
        return event

    def operation(self, op_id: str) -> dict[str, Any]:
        op: dict[str, Any] = self.call("GET", f"/api/v1/operations/{op_id}")
        return op

    def operations(self) -> list[dict[str, Any]]:
        ops: list[dict[str, Any]] = self.call("GET", "/api/v1/operations")
        return ops

    def history(self) -> list[dict[str, Any]]:
        history: list[dict[str, Any]] = self.call("GET", "/api/v1/history?limit=10000")
        return history

    def incarnations(self) -> dict[str, int]:
        """Scope -> incarnation, from the topology."""
        topology = self.call("GET", "/api/v1/topology")
        return {s["id"]: s["incarnation"] for s in topology["scopes"]}

    def vm_status(self, vm: str) -> str:
        vms = self.call("GET", "/api/v1/vms")
        status: str = next(v["status"] for v in vms if v["name"] == vm)
        return status

    # ------------------------------------------------------------ observation

    def observe(self, vms: Iterable[str] = DEMO) -> dict[str, dict[str, Any]]:
        """Every named VM's document; VMs of a scope agree; incarnations obey the rule."""
        docs = {vm: self.doc(vm) for vm in vms}
        by_scope: dict[str, dict[str, Any]] = {}
        for vm, doc in docs.items():
            scope = scope_of(vm)
            first = by_scope.setdefault(scope, doc)
            assert doc == first, f"{vm} sees another document than its scope: {doc} / {first}"
        for scope, doc in by_scope.items():
            self._check_incarnation(scope, doc)
        return docs

    def scope_doc(self, scope: str) -> dict[str, Any]:
        """The document of ``scope`` as all its live VMs see it (checked)."""
        return next(iter(self.observe(SCOPES[scope]).values()))

    def _check_incarnation(self, scope: str, doc: dict[str, Any]) -> None:
        incarnation, events = doc["DocumentIncarnation"], doc["Events"]
        previous = self.seen.get(scope)
        if previous is not None:
            before, seen_events = previous
            if events == seen_events:
                assert incarnation == before, f"{scope}: incarnation moved with no change"
            else:
                assert incarnation > before, f"{scope}: document changed, incarnation did not"
        self.seen[scope] = (incarnation, events)


Launch = Callable[..., Platform]


@pytest.fixture
def launch(start_server: Callable[..., ServerProcess]) -> Iterator[Launch]:
    """Start a server (virtual clock by default) and wrap it in a ``Platform``."""
    platforms: list[Platform] = []

    def start(
        args: Sequence[str] = VIRTUAL,
        db: Path | None = None,
        seen: dict[str, tuple[int, Any]] | None = None,
    ) -> Platform:
        platform = Platform(start_server(list(args), db=db), seen)
        platforms.append(platform)
        return platform

    yield start
    for platform in platforms:
        platform.close()


@pytest.fixture(scope="module")
def shared_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    """One demo-fleet server for a module's tests that must leave no trace."""
    server = ServerProcess(tmp_path_factory.mktemp("shared") / "forewarn.db", VIRTUAL).start()
    platform = Platform(server)
    yield platform
    platform.close()
    server.stop()


@pytest.fixture
def platform(launch: Launch) -> Platform:
    """The demo fleet on a virtual clock."""
    return launch()
