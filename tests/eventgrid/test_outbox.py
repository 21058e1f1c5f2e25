"""Every public state of an event reaches a webhook at least once, whatever the moment
a SIGKILL ends the server: a real server (time scale 100: Event Grid's retries take
0.1 s, 0.3 s...), a webhook that always answers 200 and one that fails twice, changes
made through the control API and through ARM, four SIGKILLs (right after a change,
right after an approval, while the webhook holds a notice, right after a clock advance),
each followed by a start on the same database. Every state change the history records
for a published scope reached the steady webhook; the notices a change owes are written
with it (the ``outbox``), so none waits in memory only."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from azure.core.exceptions import ServiceResponseError
from azure.core.rest import HttpRequest

from tests.arm.conftest import SUBSCRIPTION, start_arm_server
from tests.eventgrid.conftest import FLEET, GridServer
from tests.eventgrid.webhook import Behaviour, Received, webhook
from tests.support.marks import slow
from tests.support.waiting import wait_until

GROUP = "rg-grid"
#: The public status each history kind of an event announces.
STATES = {
    "event.scheduled": "Scheduled",
    "event.started": "Started",
    "event.completed": "Completed",
    "event.canceled": "Canceled",
}
PUBLISHED = {"pub", "pub2"}


def _start(tmp_path: Path, extra: tuple[str, ...] = ()) -> GridServer:
    return GridServer(start_arm_server(tmp_path, FLEET, extra=extra))


def _restart(grid: GridServer, tmp_path: Path, *, kill: bool = True) -> GridServer:
    """SIGKILL the server (or wait for a webhook's kill to end it); start it again."""
    proc = grid.server.proc
    assert proc is not None
    if kill:
        grid.server.kill()
    else:
        proc.wait(timeout=20)
    return _start(tmp_path)


def _changes(grid: GridServer) -> set[tuple[str, str]]:
    """(event id, public status) of every state change in the history of a scope that
    publishes."""
    history = grid.server.control("GET", "/api/v1/history?limit=1000").json()
    return {
        (h["event_id"], STATES[h["kind"]])
        for h in history
        if h["kind"] in STATES and h["scope_id"] in PUBLISHED
    }


def _received(hook: Behaviour) -> set[tuple[str, str]]:
    out = set()
    for r in hook.notifications():
        (item,) = r.json()
        props = item["data"]["resourceInfo"]["properties"]
        out.add((props["EventId"], props["EventStatus"]))
    return out


def _wait_quietly(predicate: Callable[[], bool], timeout: float) -> None:
    """Wait until ``predicate`` holds or ``timeout`` s passed (the caller asserts)."""
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)


def _outbox(tmp_path: Path) -> list[str]:
    db = sqlite3.connect(f"file:{tmp_path / 'forewarn.db'}?mode=ro", uri=True)
    try:
        return [str(i) for (i,) in db.execute("SELECT id FROM outbox").fetchall()]
    finally:
        db.close()


class KillOnce:
    """A webhook's hook that SIGKILLs the server it was made for while the webhook holds
    a notice (the servers started after it are left alone)."""

    def __init__(self, grid: GridServer) -> None:
        self.proc = grid.server.proc

    def __call__(self, r: Received) -> None:
        del r
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()


class KillWhenTold:
    """A webhook's hook that holds the first notice it gets until the test names the
    server to SIGKILL (``kill``), then kills it: the test may start the server, or make
    the change, after setting it (the notice may come before the test could name it)."""

    def __init__(self) -> None:
        self.grid: GridServer | None = None
        self.told = threading.Event()
        self.done = False

    def kill(self, grid: GridServer) -> None:
        """SIGKILL ``grid`` while the webhook holds a notice; wait for it to end."""
        self.grid = grid
        self.told.set()
        assert grid.server.proc is not None
        grid.server.proc.wait(timeout=30)

    def __call__(self, r: Received) -> None:
        del r
        if not self.done and self.told.wait(30) and self.grid is not None:
            self.done = True
            assert self.grid.server.proc is not None
            self.grid.server.proc.kill()


@contextlib.contextmanager
def _keeping_refused(tmp_path: Path) -> Iterator[None]:
    """The hub cannot keep a notice pending: a trigger aborts every write of
    ``eventgrid_pending``, and with it the outbox row's delete (one transaction).
    Deliveries go on meanwhile (a refused write is logged and retried)."""
    with contextlib.closing(sqlite3.connect(tmp_path / "forewarn.db", timeout=10)) as db:
        db.execute(
            "CREATE TRIGGER test_refuse BEFORE INSERT ON eventgrid_pending"
            " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        )
        db.commit()
    try:
        yield
    finally:
        with contextlib.closing(sqlite3.connect(tmp_path / "forewarn.db", timeout=10)) as db:
            db.execute("DROP TRIGGER test_refuse")
            db.commit()


def test_a_notice_only_the_outbox_holds_survives_a_sigkill_after_each_takeover(
    tmp_path: Path,
) -> None:
    """The hub cannot keep the notice pending, so the outbox alone holds it: SIGKILLed
    while the webhook holds its first attempt; the next start takes the outbox over and
    is SIGKILLed as it delivers it; the third start delivers it, with the id written
    with the change each time, and empties the outbox."""
    grid = _start(tmp_path)
    try:
        with webhook() as (url, hook):
            assert grid.subscribe("steady", url).status_code == 201
            with _keeping_refused(tmp_path):
                hook.before_answer = killer = KillWhenTold()
                (event,) = grid.trigger("user-reboot", "pub")["event_ids"]
                killer.kill(grid)  # 1. while the webhook holds the change's notice
                (owed,) = _outbox(tmp_path)

                hook.before_answer = killer = KillWhenTold()
                grid = _start(tmp_path)
                killer.kill(grid)  # 2. after the takeover, as the webhook holds it again
                assert _outbox(tmp_path) == [owed]
            hook.before_answer = None

            grid = _start(tmp_path)
            wait_until(lambda: len(hook.notifications()) == 3, 15, "delivered a third time")
            assert [r.json()[0]["id"] for r in hook.notifications()] == [owed] * 3
            assert {r.properties()["EventId"] for r in hook.notifications()} == {event}
            wait_until(lambda: _outbox(tmp_path) == [], 10, "the outbox emptied")
            assert _changes(grid) == {(event, "Scheduled")}
    finally:
        grid.server.stop()


def test_the_first_change_of_an_event_after_a_restart_reaches_the_webhook(
    tmp_path: Path,
) -> None:
    """An event made before a SIGKILL and canceled after it, another completed by the
    clock after it: both notices are delivered (a memory of the events rebuilt wrongly
    at start lost them), and the outbox is empty once they are taken over."""
    grid = _start(tmp_path)
    try:
        with webhook() as (url, hook):
            assert grid.subscribe("steady", url).status_code == 201
            (first,) = grid.trigger("user-reboot", "pub")["event_ids"]
            grid.arm.compute().virtual_machines.begin_restart(GROUP, "pub2", polling=False)
            (second,) = [e["id"] for e in grid.arm.events("pub2")]
            grid.action(first, "approve")
            grid = _restart(grid, tmp_path)

            grid.action(second, "cancel")
            grid.arm.advance(3600)
            owed = {
                (first, "Scheduled"), (first, "Started"), (first, "Completed"),
                (second, "Scheduled"), (second, "Canceled"),
            }  # fmt: skip
            assert _changes(grid) == owed
            _wait_quietly(lambda: owed <= _received(hook), 15)
            assert owed - _received(hook) == set()
            wait_until(lambda: _outbox(tmp_path) == [], 10, "the outbox emptied")
    finally:
        grid.server.stop()


@slow
def test_every_state_change_reaches_the_webhook_across_four_sigkills(tmp_path: Path) -> None:
    grid = _start(tmp_path, ("--time-scale", "100"))
    try:
        with (
            webhook() as (steady_url, steady),
            webhook(Behaviour(fail_first=2)) as (flaky_url, flaky),
        ):
            assert grid.subscribe("steady", steady_url).status_code == 201
            assert grid.subscribe("flaky", flaky_url).status_code == 201

            # 1. killed right after a change through the control API, and one through ARM
            (first,) = grid.trigger("user-reboot", "pub")["event_ids"]
            grid.arm.compute().virtual_machines.begin_restart(GROUP, "pub2", polling=False)
            (second,) = [e["id"] for e in grid.arm.events("pub2")]
            grid = _restart(grid, tmp_path)

            # 2. killed right after an approval through the control API
            grid.action(first, "approve")
            grid = _restart(grid, tmp_path)

            # 3. the first changes of both events since the restart (one canceled, one
            # completed by the clock), then killed while the webhook holds a notice of a
            # third event, made through ARM
            grid.action(second, "cancel")
            grid.arm.advance(3600)
            # the kill must come with the third event's notice, not a late one of these
            # (on a loaded machine they may still be on their way)
            wait_until(lambda: _changes(grid) <= _received(steady), 30, "step 3's notices")
            steady.before_answer = KillOnce(grid)
            with contextlib.suppress(ServiceResponseError):  # killed before ARM answered
                grid.arm.compute().virtual_machines.begin_restart(GROUP, "pub", polling=False)
            grid = _restart(grid, tmp_path, kill=False)
            steady.before_answer = None
            (third,) = [e["id"] for e in grid.arm.events("pub")]

            # 4. acknowledged through ARM, completed by the clock, killed at once
            ack = (
                f"/subscriptions/{SUBSCRIPTION}/resourcegroups/{GROUP}/providers"
                f"/Microsoft.Compute/virtualMachines/pub/providers/Microsoft.Maintenance"
                f"/scheduledevents/{third}/acknowledge?api-version=2025-11-01"
            )
            answer = grid.arm.compute().send_request(HttpRequest("POST", ack))
            assert answer.status_code == 200, answer.text()
            grid.arm.advance(3600)
            grid = _restart(grid, tmp_path)

            owed = _changes(grid)
            assert {(e, s) for e, s in owed if e in (first, second, third)} == {
                (first, "Scheduled"), (first, "Started"), (first, "Completed"),
                (second, "Scheduled"), (second, "Canceled"),
                (third, "Scheduled"), (third, "Started"), (third, "Completed"),
            }  # fmt: skip
            for hook in (steady, flaky):
                _wait_quietly(lambda: owed <= _received(hook), 20)  # noqa: B023
                assert owed - _received(hook) == set()  # names the changes never delivered
            wait_until(lambda: _outbox(tmp_path) == [], 10, "the outbox emptied")
    finally:
        grid.server.stop()
