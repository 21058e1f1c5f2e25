"""A leader frozen (SIGSTOP) for longer than a takeover, then thawed (SIGCONT).

Its kernel keeps its PostgreSQL sessions alive, so the lock alone would never pass on:
the followers see its heartbeat stop and end its sessions. The promise: another process
takes over; a change sent to the frozen leader is either refused (503) or made by the new
leader, never written under the old epoch once the new one has written; the change log's
epochs never go back; the thawed process steps down and follows, showing what the new
leader made.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.scaleout.fleet import Fleet
from tests.scaleout.pg import PgDatabase
from tests.support.marks import SLOW
from tests.support.waiting import wait_until

pytestmark = SLOW


def _role(fleet: Fleet, index: int) -> str | None:
    try:
        response = fleet.control(index, "GET", "/api/v1/cluster", timeout=2)
    except httpx.HTTPError:
        return None
    return str(response.json()["role"]) if response.status_code == 200 else None


def _operations(fleet: Fleet, index: int) -> list[str]:
    response = fleet.control(index, "GET", "/api/v1/operations")
    assert response.status_code == 200, response.text
    return sorted(op["id"] for op in response.json())


def test_a_frozen_leader_is_replaced_and_its_writes_are_fenced_when_it_thaws(
    start_fleet: Callable[..., Fleet], pg: PgDatabase
) -> None:
    fleet = start_fleet(3)
    old = fleet.wait_for_leader()
    old_epoch = fleet.cluster(old)["epoch"]
    others = [i for i in range(3) if i != old]
    body = {"kind": "user-reboot", "target": "web-0"}
    assert fleet.control(old, "POST", "/api/v1/operations", json=body).status_code == 201
    frozen = fleet.servers[old].proc
    assert frozen is not None
    frozen.send_signal(signal.SIGSTOP)
    frozen_at = time.monotonic()
    late: list[Any] = []

    def send_to_the_frozen_leader() -> None:  # it answers only once thawed
        try:
            with httpx.Client(timeout=120, trust_env=False) as client:
                late.append(
                    client.post(
                        fleet.servers[old].control_url + "/api/v1/operations",
                        json={"kind": "user-reboot", "target": "web-1"},
                    )
                )
        except httpx.HTTPError as exc:
            late.append(exc)

    sender = threading.Thread(target=send_to_the_frozen_leader, daemon=True)
    try:
        sender.start()
        (new,) = wait_until(  # (index,): index 0 is a leader too
            lambda: [i for i in others if _role(fleet, i) == "leader"],
            60,
            "another process to take over from the frozen leader",
        )
        takeover = time.monotonic() - frozen_at
        assert fleet.cluster(new)["epoch"] > old_epoch
        made = fleet.control(new, "POST", "/api/v1/operations", json={**body, "target": "web-2"})
        assert made.status_code == 201, made.text
    finally:
        frozen.send_signal(signal.SIGCONT)
    sender.join(timeout=120)
    (answer,) = late
    wait_until(lambda: _role(fleet, old) == "follower", 30, "the thawed leader to step down")

    # The change log: once a newer epoch wrote, no entry of an older one follows.
    epochs = [int(str(e)) for (e,) in pg.execute("SELECT epoch FROM changes ORDER BY seq")]
    assert epochs == sorted(epochs), epochs
    assert epochs[-1] > old_epoch
    in_database = sorted(str(i) for (i,) in pg.execute("SELECT id FROM operations"))
    assert isinstance(answer, httpx.Response), answer
    if answer.status_code == 201:  # made by the new leader (forwarded once it stepped down)
        assert answer.json()["id"] in in_database
    else:  # refused: then it was not made anywhere
        assert answer.status_code == 503, answer.text
        assert len(in_database) == 2
    assert _operations(fleet, new) == in_database
    wait_until(lambda: _operations(fleet, old) == in_database, 15, "the thawed process to catch up")
    print(f"takeover after a freeze: {takeover:.1f} s; late change answered {answer.status_code}")
