"""The verdict's ETag across a restart of ``forewarn serve`` (SIGTERM and SIGKILL) on
the same database: a tag a client cached is answered 304 while the verdict graded after
the restart is still the one tagged, and 200 with a new tag once it changed (also when
what changed it came while the client was away). A real server, raw httpx."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.serverproc import VIRTUAL, ServerProcess, trigger

ROUTES = ("/api/v1/reactions", "/api/v1/report")
WEB_0 = "127.1.0.1"  # web-0's address in the demo fleet


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "forewarn.db", VIRTUAL).start()
    yield process
    process.stop()


def _tags(server: ServerProcess) -> dict[str, str]:
    """Each route's tag, from a full answer."""
    tags = {}
    for route in ROUTES:
        response = server.control("GET", route)
        assert response.status_code == 200, response.text
        tags[route] = response.headers["etag"]
    return tags


def _revalidated(server: ServerProcess, tags: dict[str, str]) -> dict[str, tuple[int, str]]:
    """Each route asked with the tag held: status and the tag answered."""
    out = {}
    for route, tag in tags.items():
        response = server.control("GET", route, headers={"If-None-Match": tag})
        out[route] = (response.status_code, response.headers["etag"])
        if response.status_code == 304:
            assert response.content == b""
    return out


def _restart(server: ServerProcess, sig: int) -> None:
    server.kill(sig)
    server.start()


def _polls(vm_address: str, server: ServerProcess) -> None:
    response = server.imds(vm_address=vm_address)
    assert response.status_code == 200, response.text


def test_a_cached_verdict_tag_survives_a_restart_only_while_the_verdict_is_the_same(
    server: ServerProcess,
) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    _polls(WEB_0, server)  # web-0 saw the event (a fact, written before it is graded)
    approved = server.imds(
        "POST", vm_address=WEB_0, json={"StartRequests": [{"EventId": event_id}]}
    )
    assert approved.status_code == 200, approved.text
    tags = _tags(server)

    for sig in (signal.SIGTERM, signal.SIGKILL):  # nothing changed: still the same
        _restart(server, sig)
        assert _revalidated(server, tags) == {r: (304, t) for r, t in tags.items()}, sig

    trigger(server, "user-reboot", "web-1")  # a change, then a crash before anyone looks
    _restart(server, signal.SIGKILL)
    changed = _revalidated(server, tags)
    assert all(status == 200 and tag != tags[r] for r, (status, tag) in changed.items())
    now = {r: tag for r, (_, tag) in changed.items()}

    _restart(server, signal.SIGKILL)  # a poll after the restart changes the verdict too
    assert _revalidated(server, now) == {r: (304, t) for r, t in now.items()}
    _polls("127.1.0.2", server)  # web-1 sees its event
    moved = _revalidated(server, now)
    assert all(status == 200 and tag != now[r] for r, (status, tag) in moved.items())
    tags_moved = {r: tag for r, (_, tag) in moved.items()}
    _restart(server, signal.SIGKILL)
    assert _revalidated(server, tags_moved) == {r: (304, t) for r, t in tags_moved.items()}
