"""Make the sample rehearsal report the README links to (``docs/report-sample.html``).

A rehearsal of the demo fleet played in one process on the virtual clock, so the page
comes out the same every time: every VM but the jumpbox polls through the real endpoint,
once a second each at its own moment (the cloud service's instances every 5 s); the web
VMs' agents approve their own events a few seconds after seeing them, through a rolling
platform reboot of the availability set; FrontEnd_IN_1 stops polling before a live
migration of its host; workers_3 runs a client on api-version 2017-08-01, which never
shows Preempt; web-5 approves a redeploy of web-2, which does not list it.

    .venv/bin/python docs/sample_report.py [OUT.html]
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forewarn.control.rehearsal_routes import ReactionRoutes
from forewarn.fabric import Clock, Fabric, FabricConfig, OperationRequest
from forewarn.fleet import build_topology, demo_fleet
from forewarn.imds import Endpoint, ImdsSettings, Request
from forewarn.rehearsal import track_reactions
from forewarn.rehearsal.report import render_report
from forewarn.store import SQLiteStore

START = 1_795_000_000.0  # 2026-11-18 09:46:40 UTC
OUT = Path(__file__).resolve().parent / "report-sample.html"


def _ids(prefix: str) -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter):04d}"


def _event_ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"{next(counter):08X}-5A3C-4E1B-9F0D-7C2B1A6E4D3F"


class Fleet:
    """The demo fleet's VMs asking the endpoint, as their agents would."""

    def __init__(self) -> None:
        store = SQLiteStore(":memory:")
        self.fabric = Fabric(
            build_topology(demo_fleet()), store, Clock.virtual(start=START),
            FabricConfig(enablement="always"), new_id=_event_ids(), new_token=_ids("0"),
        )  # fmt: skip
        self.reactions = track_reactions(self.fabric, store)
        self.endpoint = Endpoint(
            self.fabric, ImdsSettings(rate_limit=None), reactions=self.reactions
        )
        self.silent: set[str] = {"jumpbox"}
        self.versions: dict[str, str] = {"workers_3": "2017-08-01"}
        self.approvals: dict[tuple[str, str], float] = {}  # (event, VM) -> when it acts
        #: Agents that approve the events listing their VM, this many seconds after.
        self.agents = {"web-0": 5.0, "web-1": 2.5, "web-2": 6.0, "web-3": 3.5, "web-4": 8.0}
        self.handled: set[str] = set()

    def request(self, vm: str, method: str = "GET", body: bytes = b"") -> Any:
        address = self.fabric.topology.vms[vm].address
        version = self.versions.get(vm, "2020-07-01")
        request = Request(
            method, "/metadata/scheduledevents", f"api-version={version}".encode(),
            [(b"metadata", b"true")], address, None, body,
        )  # fmt: skip
        return self.endpoint.handle(request)

    def second(self) -> None:
        """One second of the fleet, in tenths: each VM polls at its own phase (every 5 s
        for the cloud service's instances); agents approve when due."""
        names = list(self.fabric.topology.vms)
        for _ in range(10):
            now = self.fabric.clock.now()
            for index, name in enumerate(names):
                if name in self.silent or self.fabric.is_deleted(name):
                    continue
                every = 50 if "_IN_" in name else 10
                if (round(now * 10) - index * 7) % every == 0:
                    self.agent(name, self.request(name))
            for (event_id, vm), at in list(self.approvals.items()):
                if now >= at:
                    body = b'{"StartRequests":[{"EventId":"' + event_id.encode() + b'"}]}'
                    self.request(vm, "POST", body)
                    del self.approvals[event_id, vm]
            self.fabric.advance(0.1)

    def agent(self, vm: str, reply: Any) -> None:
        """What ``vm``'s agent does with a document: approve what lists it, later."""
        delay = self.agents.get(vm)
        if delay is None or reply.status != 200:
            return
        for event in json.loads(reply.body)["Events"]:
            mine = event["EventStatus"] == "Scheduled" and vm in event["Resources"]
            if mine and event["EventId"] not in self.handled:
                self.handled.add(event["EventId"])
                self.approve_later(event["EventId"], vm, delay)

    def submit(self, kind: str, *vms: str, host: str | None = None) -> list[str]:
        op = self.fabric.submit(OperationRequest(kind=kind, vms=vms, host=host))
        return list(op.event_ids)

    def approve_later(self, event_id: str, vm: str, after: float) -> None:
        self.approvals[event_id, vm] = self.fabric.clock.now() + after


async def rehearse() -> str:
    fleet = Fleet()
    plan: dict[int, Callable[[], None]] = {
        10: lambda: fleet.submit("user-reboot", "web-0") and None,
        25: lambda: fleet.silent.add("FrontEnd_IN_1"),
        40: lambda: fleet.submit("live-migration", host="host-2") and None,
        60: lambda: fleet.submit("spot-eviction", "workers_3") and None,
        1000: lambda: [fleet.approve_later(e, "web-5", 3) for e in
                       fleet.submit("user-redeploy", "web-2")] and None,
        1100: lambda: fleet.submit("hardware-failure", "jumpbox") and None,
        1200: lambda: fleet.fabric.submit(
            OperationRequest(kind="platform-reboot", scope="web")) and None,
    }  # fmt: skip
    for second in range(3000):
        action = plan.get(second)
        if action is not None:
            action()
        fleet.second()
    title = "forewarn rehearsal report (sample: the demo fleet)"
    routes = ReactionRoutes(fleet.fabric, fleet.reactions)
    return await routes.verdict(None, 30.0, lambda report: render_report(report, title=title))


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUT
    out.write_text(asyncio.run(rehearse()), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
