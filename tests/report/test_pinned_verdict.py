"""A reader that owes many requests to one verdict names it by its id (``verdict=ID``,
from the ``Forewarn-Verdict`` header) and gets that very verdict, however the drill moves
on: with a real clock every request would otherwise grade again (a minute at a million
VMs) and page through a verdict that changed under it.

A real server on the real clock: 120 availability sets of 2 VMs (and the standalone VM
"one"), a host update over the region whose first wave holds update domain 0 of every
set (120 events in 120 scopes: more than the 100 events and 50 scopes a kind the
rolled-up verdict keeps), none of whose VMs polls. Each request's instant differs, so
each unpinned one grades anew (counted at ``/metrics``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forewarn.cli.scope_pages import every_scope_row
from forewarn.controlapi import ControlClient
from tests.support.cli import printed
from tests.support.regionfleet import JSON, fleet_of_sets
from tests.support.serverproc import ServerProcess

SETS = 120
HEADER = "Forewarn-Verdict"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("pinned")
    (base / "fleet.yaml").write_text(fleet_of_sets(SETS, 2))
    args = ["--enablement", "always", "--rate-limit", "0", "--fleet", str(base / "fleet.yaml")]
    started = ServerProcess(base / "f.db", args).start()
    body = {"kind": "host-update", "region": True, "wave_hosts": 10_000}
    try:
        assert started.control("POST", "/api/v1/operations", headers=JSON, json=body).is_success
        yield started
    finally:
        started.stop()


def graded(server: ServerProcess) -> int:
    text = server.control("GET", "/metrics").text
    found = re.search(r"^forewarn_verdicts_graded_total (\S+)$", text, re.M)
    assert found, text
    return int(float(found.group(1)))


def _get(server: ServerProcess, path: str = "/api/v1/reactions", **params: Any) -> Any:
    return server.control("GET", path, params=params)


def test_a_verdict_named_by_its_id_is_that_verdict_while_newer_ones_are_graded(
    server: ServerProcess,
) -> None:
    unpinned = _get(server)
    first = _get(server, pin="true")
    newer = _get(server)
    assert unpinned.status_code == first.status_code == newer.status_code == 200
    first_id, newer_id = first.headers[HEADER], newer.headers[HEADER]
    assert len({unpinned.headers[HEADER], first_id, newer_id}) == 3  # each graded anew
    assert _get(server, verdict=unpinned.headers[HEADER]).status_code == 410  # let go
    assert newer.json()["generated_at"] > first.json()["generated_at"]
    trimmed = first.json()["trimmed"]["event_scopes"]
    assert trimmed > 50 and len(first.json()["event_scopes"]) < trimmed
    count = graded(server)
    again = _get(server, verdict=first_id)
    assert again.status_code == 200 and again.headers[HEADER] == first_id
    assert again.content == first.content
    rows = _get(server, verdict=first_id, scopes="event_scopes", limit=1000).json()
    assert rows["generated_at"] == first.json()["generated_at"]
    assert rows["scope_page"]["total"] == len(rows["event_scopes"]) == trimmed
    page = _get(server, "/api/v1/report", verdict=first_id)
    assert page.status_code == 200 and page.headers[HEADER] == first_id
    window = _get(server, verdict=first_id, stale_after=first.json()["stale_after"])
    assert window.content == first.content  # the verdict's own window may be given
    assert graded(server) == count  # none of those graded


@pytest.mark.parametrize(
    ("params", "status", "says"),
    [
        ({"verdict": "never-kept"}, 410, "verdict never-kept is no longer kept"),
        ({"verdict": ""}, 400, "query parameter verdict is empty"),
        ({"verdict": "x" * 101}, 400, "query parameter verdict is longer than 100"),
        ({"stale_after": "7"}, 400, "was graded with stale_after=30.0; leave stale_after out"),
        ({"pin": "true"}, 400, "pin=true pins the verdict graded now; verdict= names one"),
        ({"since": "1"}, 400, "was graded with since=None; leave since out"),
    ],
)
def test_a_verdict_not_kept_or_asked_for_with_another_window_is_refused(
    server: ServerProcess, params: dict[str, str], status: int, says: str
) -> None:
    kept = _get(server, pin="true").headers[HEADER]
    count = graded(server)
    for path in ("/api/v1/reactions", "/api/v1/report"):
        answer = _get(server, path, **{"verdict": kept, **params})
        assert answer.status_code == status, answer.text
        assert says in answer.json()["error"]
    assert graded(server) == count  # refused: nothing graded
    assert _get(server, verdict=kept).status_code == 200  # and the verdict still kept


def test_the_junit_file_and_the_html_page_are_each_one_grading(
    server: ServerProcess, tmp_path: Path
) -> None:
    before = graded(server)
    out = tmp_path / "r.xml"
    printed(server.control_url, "report", "--junit", str(out), "--html", str(tmp_path / "r.html"))
    assert graded(server) == before + 1  # the verdict, then its pages and page from it
    cases = ET.parse(out).getroot().findall(".//testcase")
    scoped = [c.get("name") for c in cases if c.get("classname") == "forewarn.scopes"]
    assert len(scoped) == len(set(scoped)) > 50
    assert "Every scope" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_pages_of_a_verdict_let_go_are_read_again_from_the_latest(server: ServerProcess) -> None:
    first = _get(server).json()  # not pinned: let go once the next is graded
    gone = {"verdict": "never-kept"}
    with ControlClient(server.control_url) as api:
        rows = every_scope_row(api, gone, first, "event_scopes")
    assert len({r["scope"] for r in rows}) == len(rows) == first["trimmed"]["event_scopes"]
