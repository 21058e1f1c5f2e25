"""Reading a drill after a region rollout gave every VM an event: the same size whatever
the size of the scopes (issue 39: nothing a user reads grows with the fleet).

Two real servers, the same 20 availability sets, 10 and then 150 VMs each (3,000 VMs),
none of which polls: a host update rolled over the region to its end, then the verdict
read the ways a user reads it: ``GET /api/v1/reactions`` (rolled up by default, single
VMs a page at a time), ``forewarn report`` in the terminal, ``--json``, ``--html`` and
``--junit``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import printed
from tests.support.regionfleet import rolled_out
from tests.support.serverproc import ServerProcess

SCOPES = 20  # and the standalone VM "one"
SMALL, BIG = 10, 150  # VMs a scope


def _vms(per_scope: int) -> int:
    return SCOPES * per_scope + 1


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, ServerProcess]]:
    base = tmp_path_factory.mktemp("bounded")
    started = {}
    try:
        for size in (SMALL, BIG):
            started[size] = rolled_out(base / str(size), SCOPES, size)
        yield started
    finally:
        for server in started.values():
            server.stop()


def _reactions(server: ServerProcess, **params: Any) -> Any:
    response = server.control("GET", "/api/v1/reactions", params=params)
    assert response.status_code == 200, response.text
    return response


def test_every_vm_had_an_event(servers: dict[int, ServerProcess]) -> None:
    for size, server in servers.items():
        full = _reactions(server, full="true").json()
        assert len(full["vms"]) == _vms(size)
        assert not full["rolled_up"] and full["trimmed"] == {}
        assert len(full["never_polled"]) == _vms(size)


def test_the_rolled_up_verdict_does_not_grow_with_the_scopes(
    servers: dict[int, ServerProcess],
) -> None:
    small, big = (_reactions(servers[n]) for n in (SMALL, BIG))
    assert len(big.content) < 1.3 * len(small.content), (len(small.content), len(big.content))
    report = big.json()
    assert report["rolled_up"] and report["vm_page"] is None
    assert report["trimmed"]["vms"] == report["trimmed"]["never_polled"] == _vms(BIG)
    assert len(report["vms"]) == 100 and len(report["events"]) <= 100
    assert report["trimmed"]["events"] > 100  # every VM's event is counted all the same
    assert sum(report["totals"].values()) == report["trimmed"]["events"]
    assert len(report["by_scope"]) == len(report["event_scopes"]) == SCOPES + 1
    assert {t["vms"] for t in report["event_scopes"]} == {BIG, 1}
    assert sum(t["events"] for t in report["event_scopes"]) == report["trimmed"]["events"]
    (op,) = report["operations"]
    assert op["vms"] == _vms(BIG) and len(op["missed"]) <= 20 and op["trimmed"]["missed"]


def test_the_vms_come_a_page_at_a_time(servers: dict[int, ServerProcess]) -> None:
    server = servers[BIG]
    full = _reactions(server, full="true").json()
    of_scope = [v["vm"] for v in full["vms"] if v["scope"] == "as3"]
    first = _reactions(server, scope="as3", limit=100).json()
    rest = _reactions(server, scope="as3", offset=100, limit=100).json()
    assert first["vm_page"] == {"which": "all", "scope": "as3", "offset": 0, "limit": 100,
                                "total": BIG}  # fmt: skip
    assert [v["vm"] for v in first["vms"] + rest["vms"]] == of_scope
    missed = _reactions(server, vms="missed", limit=7).json()
    assert len(missed["vms"]) == 7 and missed["vm_page"]["total"] == _vms(BIG)
    assert {v["verdict"] for v in missed["vms"]} == {"missed"}
    assert _reactions(server, vms="approved").json()["vms"] == []


BAD = [
    ({"vms": "some"}, "query parameter vms takes one of all, attention"),
    ({"vms": "all", "limit": "-1"}, "limit must be a whole number from 1 to 10000"),
    ({"vms": "all", "limit": "10001"}, "limit must be a whole number"),
    ({"offset": "5"}, "(give vms or scope) or of scopes (give scopes)"),
    ({"scopes": "vms"}, "query parameter scopes takes one of by_scope, event_scopes"),
    ({"scopes": "by_scope", "vms": "all"}, "ask for one or the other"),
    ({"scopes": "by_scope", "scope": "as3"}, "ask for one or the other"),
    ({"scopes": "by_scope", "full": "true"}, "full=true is the whole verdict"),
    ({"region": "westeurope"}, "give scopes too"),
    ({"kind": "availability_set"}, "give scopes too"),
    ({"q": "as3"}, "give scopes too"),
    ({"scopes": "by_scope", "q": "x" * 201}, "q is longer than 200 characters"),
    ({"scopes": "by_scope", "kind": "vm"}, "query parameter kind takes one of standalone"),
    ({"scopes": "by_scope", "region": " "}, "query parameter region is empty"),
    ({"scopes": "event_scopes", "limit": "0"}, "limit must be a whole number from 1 to 10000"),
    ({"full": "yes"}, "full takes true or false"),
    ({"full": "true", "vms": "all"}, "full=true is the whole verdict"),
    ({"scope": " "}, "scope is empty"),
]  # fmt: skip


@pytest.mark.parametrize(("params", "message"), BAD, ids=[str(p) for p, _ in BAD])
def test_a_bad_shape_is_400(
    servers: dict[int, ServerProcess], params: dict[str, str], message: str
) -> None:
    response = servers[SMALL].control("GET", "/api/v1/reactions", params=params)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_the_report_stays_one_screen_in_every_format(
    servers: dict[int, ServerProcess], tmp_path: Path
) -> None:
    terminal = {n: printed(s.control_url, "report") for n, s in servers.items()}
    assert terminal[BIG].count("\n") == terminal[SMALL].count("\n") <= 60
    assert f"Never polled: {_vms(BIG)} VMs" in terminal[BIG]
    assert f"0 of {_vms(BIG)} approved, {_vms(BIG)} never saw it" in terminal[BIG]
    as_json = {n: printed(s.control_url, "report", "--json") for n, s in servers.items()}
    assert len(as_json[BIG]) < 1.3 * len(as_json[SMALL])
    assert json.loads(as_json[BIG])["trimmed"]["vms"] == _vms(BIG)
    pages = {}
    for n, server in servers.items():
        printed(server.control_url, "report", "--html", str(tmp_path / f"{n}.html"))
        pages[n] = (tmp_path / f"{n}.html").read_text()
    assert len(pages[BIG]) < 1.3 * len(pages[SMALL]), (len(pages[SMALL]), len(pages[BIG]))
    assert f"VMs, failed first ({_vms(BIG)})" in pages[BIG] and "Rolled up" in pages[BIG]
    cases: dict[int, list[ET.Element]] = {}
    for n, server in servers.items():
        printed(server.control_url, "report", "--junit", str(tmp_path / f"{n}.xml"))
        cases[n] = ET.parse(tmp_path / f"{n}.xml").getroot().findall(".//testcase")
    assert len(cases[BIG]) == len(cases[SMALL]) == 1 + SCOPES + 1  # the rollout, each scope
    assert {c.get("classname") for c in cases[BIG]} == {"forewarn.operations", "forewarn.scopes"}
    assert all(c.find("failure") is not None for c in cases[BIG])  # nobody polled
    whole = json.loads(printed(servers[BIG].control_url, "report", "--json", "--vms"))
    assert len(whole["vms"]) == _vms(BIG) and not whole["rolled_up"]
