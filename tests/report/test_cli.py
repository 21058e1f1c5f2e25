"""``forewarn report`` against a real server on a virtual clock: the table, JSON, the
HTML file, ``--since`` and ``--exit-code``, and mistakes as one error line."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import Result, run_cli
from tests.support.serverproc import VIRTUAL, ServerProcess

JSON = {"Content-Type": "application/json"}
WEB0, WEB3 = "127.1.0.1", "127.1.0.4"  # their addresses in the demo fleet


@pytest.fixture
def server(start_server: Callable[..., ServerProcess]) -> ServerProcess:
    return start_server(VIRTUAL)


def _cli(server: ServerProcess, *args: str) -> Result:
    return run_cli(list(args), server.control_url)


def _rehearse(server: ServerProcess) -> tuple[str, str]:
    """web-0 sees and approves its reboot; web-3 never polls and misses its own."""
    assert server.imds(vm_address=WEB0).status_code == 200
    ok = server.control("POST", "/api/v1/operations", headers=JSON,
                        json={"kind": "user-reboot", "target": "web-0"}).json()  # fmt: skip
    missed = server.control("POST", "/api/v1/operations", headers=JSON,
                            json={"kind": "user-reboot", "target": "web-3"}).json()  # fmt: skip
    (ok_id,), (missed_id,) = ok["event_ids"], missed["event_ids"]
    server.control("POST", "/api/v1/clock/advance", headers=JSON, json={"seconds": 2})
    assert server.imds(vm_address=WEB0).status_code == 200
    body = {"StartRequests": [{"EventId": ok_id}]}
    assert server.imds("POST", vm_address=WEB0, json=body).status_code == 200
    server.control("POST", "/api/v1/clock/advance", headers=JSON, json={"seconds": 900})
    return ok_id, missed_id


def test_the_table_names_each_verdict_and_who_missed_what(server: ServerProcess) -> None:
    ok_id, missed_id = _rehearse(server)
    result = _cli(server, "report", "--wide")
    assert result.code == 0, result.stderr
    assert result.stdout.startswith(
        "2 operations: 0 no-notice, 1 fail, 0 warn, 0 pending, 1 ok, 0 info\n"
        "2 events: 1 ok, 0 warn, 1 fail, 0 pending, 0 info\n"
    )
    assert ok_id in result.stdout and missed_id in result.stdout
    assert "approved by web-0" in result.stdout
    assert re.search(r"^Missed *$", result.stdout, re.M)
    assert "VMs that failed, earliest first" in result.stdout
    assert "web-3" in result.stdout and "never polled" in result.stdout
    assert "detection latency: 1 values, median 2.0s" in result.stdout
    assert _cli(server, "report", "--exit-code").code == 1  # an event failed


def test_json_and_html_are_the_server_s_verdict(server: ServerProcess, tmp_path: Path) -> None:
    ok_id, _ = _rehearse(server)
    out = tmp_path / "report.html"
    result = _cli(server, "report", "--json", "--html", str(out))
    assert result.code == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed == server.control("GET", "/api/v1/reactions").json()
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert f'id="event-{ok_id}"' in page and page.count('<svg class="timeline"') == 2
    # graded once: the page, the JSON and the second read all took the verdict kept (the
    # clock still, nothing written since); a move of the clock grades it anew
    assert _verdict_counts(server) == (1, 2)
    server.control("POST", "/api/v1/clock/advance", headers=JSON, json={"seconds": 1})
    assert _cli(server, "report").code == 0
    assert _verdict_counts(server) == (2, 2)


def _verdict_counts(server: ServerProcess) -> tuple[int, int]:
    """(graded, reused) as the server's ``/metrics`` says them."""
    text = server.control("GET", "/metrics").text
    return tuple(  # type: ignore[return-value]
        int(float(re.search(rf"^forewarn_verdicts_{name}_total (\S+)$", text, re.M).group(1)))  # type: ignore[union-attr]
        for name in ("graded", "reused")
    )


def test_a_report_written_to_files_prints_only_its_headline(
    server: ServerProcess, tmp_path: Path
) -> None:
    """``--html`` (and ``--junit``) write the report: the terminal gets the verdict's two
    lines and where each file is, not the whole report again."""
    _rehearse(server)
    page, xml = tmp_path / "report.html", tmp_path / "report.xml"
    result = _cli(server, "report", "--html", str(page), "--junit", str(xml))
    assert result.code == 0, result.stderr
    assert result.stdout == (
        "2 operations: 0 no-notice, 1 fail, 0 warn, 0 pending, 1 ok, 0 info\n"
        "2 events: 1 ok, 0 warn, 1 fail, 0 pending, 0 info\n"
        f"HTML report written to {page}\n"
        f"JUnit XML written to {xml}\n"
    )
    assert page.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert ET.parse(xml).getroot().tag == "testsuites"


def test_since_takes_a_time_or_a_duration_ago_on_the_server_s_clock(
    server: ServerProcess,
) -> None:
    _rehearse(server)  # both events were created 902 s ago on the virtual clock
    for since, count in [("10m", 0), ("20m", 2), ("1h", 2)]:
        data = json.loads(_cli(server, "report", "--json", "--since", since).stdout)
        assert len(data["events"]) == count, since
    now = server.control("GET", "/api/v1/clock").json()["now"]
    data = json.loads(_cli(server, "report", "--json", "--since", str(now - 60)).stdout)
    assert data["events"] == [] and data["since"] == now - 60
    iso = json.loads(_cli(server, "report", "--json", "--since", "2000-01-01T00:00:00").stdout)
    assert len(iso["events"]) == 2


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--since", "last tuesday"], "--since 'last tuesday' is neither a time"),
        (["--stale-after", "-5"], "'-5' must not be negative"),
        (["--stale-after", "nan"], "is not a number of seconds"),
    ],
)
def test_mistakes_are_one_error_line(server: ServerProcess, args: list[str], fragment: str) -> None:
    _cli(server, "report", *args).assert_one_error_line(fragment)


def test_an_unwritable_html_file_is_one_error_line(server: ServerProcess, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "r.html"
    _cli(server, "report", "--html", str(missing)).assert_one_error_line(f"cannot write {missing}")


def test_junit_has_a_case_per_operation_and_event(server: ServerProcess, tmp_path: Path) -> None:
    _, missed_id = _rehearse(server)
    out = tmp_path / "rehearsal.xml"
    result = _cli(server, "report", "--junit", str(out))
    assert result.code == 0, result.stderr
    assert f"JUnit XML written to {out}" in result.stdout
    suites = ET.parse(out).getroot()
    assert suites.tag == "testsuites"
    (suite,) = suites.findall("testsuite")
    for attribute in ("name", "tests", "failures", "errors", "skipped", "time"):
        assert suite.get(attribute) is not None, attribute
    cases = suite.findall("testcase")
    assert (suite.get("tests"), suite.get("failures")) == ("4", "2")  # 2 operations, 2 events
    assert all(c.get("classname") and c.get("name") and c.get("time") for c in cases)
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    event = failed[f"Reboot of web ({missed_id})"]
    assert event is not None and "web-3" in (event.get("message") or "")
    messages = {n: f.get("message") or "" for n, f in failed.items() if f is not None and n}
    assert any(
        n.startswith("user-reboot vm web-3") and "never saw it: web-3" in m
        for n, m in messages.items()
    )
