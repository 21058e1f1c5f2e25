"""The per-scope roll-ups of a drill stay the same size whatever the number of scopes
(issue 39): ``by_scope`` and ``event_scopes`` keep the worst 50 of each region and kind,
``trimmed`` counts every one, and every row comes back a page at a time
(``?scopes=...``); the terminal report, ``--all``, ``--junit`` and ``--html`` read them.

Two real servers: 60 and 600 availability sets of 2 VMs (and the standalone VM "one"),
none of which polls, a host update rolled over the region to its end.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import printed
from tests.support.regionfleet import rolled_out
from tests.support.serverproc import ServerProcess

FEW, MANY = 60, 600  # availability sets (and one standalone VM)
KEPT = 50  # rows of each region and kind the rolled-up verdict keeps


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, ServerProcess]]:
    base = tmp_path_factory.mktemp("scopes")
    started = {}
    try:
        for sets in (FEW, MANY):
            started[sets] = rolled_out(base / str(sets), sets, 2)
        yield started
    finally:
        for server in started.values():
            server.stop()


def _get(server: ServerProcess, **params: Any) -> Any:
    response = server.control("GET", "/api/v1/reactions", params=params)
    assert response.status_code == 200, response.text
    return response


def test_the_scope_rows_are_cut_to_the_worst_of_each_kind_and_counted_whole(
    servers: dict[int, ServerProcess],
) -> None:
    few, many = (_get(servers[n]) for n in (FEW, MANY))
    assert len(many.content) < 1.3 * len(few.content), (len(few.content), len(many.content))
    for sets, response in ((FEW, few), (MANY, many)):
        report = response.json()
        assert report["trimmed"]["by_scope"] == report["trimmed"]["event_scopes"] == sets + 1
        for name in ("by_scope", "event_scopes"):
            kinds = [t["kind"] for t in report[name]]
            assert kinds.count("availability_set") == KEPT and kinds.count("standalone") == 1
        (sets_kind,) = [k for k in report["by_kind"] if k["kind"] == "availability_set"]
        assert sets_kind["scopes"] == sets and sets_kind["vms"] == 2 * sets  # every one summed
    whole = _get(servers[MANY], full="true").json()
    assert len(whole["by_scope"]) == len(whole["event_scopes"]) == MANY + 1
    assert "by_scope" not in whole["trimmed"]
    kept = many.json()
    # the worst first, in the whole list's order (most VMs needing attention; worst verdict)
    for name in ("by_scope", "event_scopes"):
        sets = [t["scope"] for t in whole[name] if t["kind"] == "availability_set"]
        assert [t["scope"] for t in kept[name] if t["kind"] == "availability_set"] == sets[:KEPT]


def test_every_scope_row_comes_once_a_page_at_a_time(servers: dict[int, ServerProcess]) -> None:
    server = servers[MANY]
    whole = _get(server, full="true").json()
    for name in ("by_scope", "event_scopes"):
        rows: list[dict[str, Any]] = []
        while True:
            page = _get(server, scopes=name, offset=len(rows), limit=77).json()
            assert page["scope_page"]["total"] == MANY + 1
            if not page[name]:
                break
            rows += page[name]
        assert rows == whole[name]  # each once, in the whole verdict's order
        other = "event_scopes" if name == "by_scope" else "by_scope"
        assert len(page[other]) == KEPT + 1  # the rest of the answer stays rolled up
    region = whole["by_kind"][0]["region"]
    sets = _get(server, scopes="by_scope", kind="availability_set", region=region, limit=10)
    assert sets.json()["scope_page"] == {"which": "by_scope", "region": region,
                                         "kind": "availability_set", "q": None, "offset": 0,
                                         "limit": 10, "total": MANY}  # fmt: skip
    assert {t["kind"] for t in sets.json()["by_scope"]} == {"availability_set"}
    alone = _get(server, scopes="event_scopes", kind="standalone").json()
    assert [t["scope"] for t in alone["event_scopes"]] == ["one"]
    named = _get(server, scopes="event_scopes", q="AS59").json()
    assert {t["scope"] for t in named["event_scopes"]} == {"as59", *(f"as59{k}" for k in range(10))}
    assert named["scope_page"]["total"] == 11
    elsewhere = _get(server, scopes="by_scope", region="nowhere").json()
    assert elsewhere["by_scope"] == [] and elsewhere["scope_page"]["total"] == 0


def _listed_scopes(text: str) -> set[str]:
    """The scopes the per-scope table names (its rows start with the scope)."""
    return set(re.findall(r"^(as\d+|one) ", text, re.M))


def test_the_report_says_every_scope_and_lists_each_with_all(
    servers: dict[int, ServerProcess],
) -> None:
    terminal = printed(servers[MANY].control_url, "report")
    assert f"(showing 10 of {MANY + 1}; --all lists every scope)" in terminal
    assert len(_listed_scopes(terminal)) == 10
    every = printed(servers[MANY].control_url, "report", "--all")
    assert "... per scope, most first\n" in every  # no "showing 10 of ..."
    assert _listed_scopes(every.split("... per scope, most first")[1]) == {
        *(f"as{k}" for k in range(MANY)), "one"}  # fmt: skip


def test_the_junit_file_has_a_case_for_every_scope_with_events(
    servers: dict[int, ServerProcess], tmp_path: Path
) -> None:
    for sets, server in servers.items():
        out = tmp_path / f"{sets}.xml"
        printed(server.control_url, "report", "--junit", str(out))
        cases = ET.parse(out).getroot().findall(".//testcase")
        scoped = [c.get("name") for c in cases if c.get("classname") == "forewarn.scopes"]
        assert len(scoped) == len(set(scoped)) == sets + 1, len(scoped)
        assert len(cases) == 1 + sets + 1  # the rollout, then each scope once


def test_the_html_page_counts_every_scope(
    servers: dict[int, ServerProcess], tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    printed(servers[MANY].control_url, "report", "--html", str(out))
    page = out.read_text(encoding="utf-8")
    assert f"Every scope ({MANY + 1}): the first {KEPT} of each region and kind here" in page
    assert page.count('class="scope-row"') == KEPT + 1  # the rows kept, each once
