"""What the report says at fleet scale: operations rolled up, VMs named, no-notice first.

The 1,000-VM example fleet, played as in ``fleet_scale`` (through the real endpoint, by
source address, on the virtual clock); every assertion reads ``GET /api/v1/reactions``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import click
import pytest
from click.testing import CliRunner

from forewarn.cli.report import _print as print_report
from tests.rehearsal.conftest import Rehearsal
from tests.rehearsal.fleet_scale import play, thousand_rehearsal

CACHE = [f"cache-{i}" for i in range(48)]


@pytest.fixture(scope="module")
def played(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    r = thousand_rehearsal(tmp_path_factory.mktemp("thousand") / "r.db")
    try:
        ids = asyncio.run(play(r))
        r.advance(20 * 60)  # every rollout batch and the host update run their course
        html = asyncio.run(r.control_get("/api/v1/report"))
        assert html.status_code == 200
        ids["html"] = html.text
        ids["rolled_up"] = asyncio.run(r.report())  # the default: lists of VMs cut short
        yield asyncio.run(r.report(full="true")), ids
    finally:
        r.fabric.close()
        r.store.close()


def _op(report: dict[str, Any], op_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(o for o in report["operations"] if o["id"] == op_id)
    return found


def test_vms_hit_with_no_notice_are_a_verdict_listed_first(played: Any) -> None:
    report, ids = played
    assert report["operations"][0]["verdict"] == "no-notice"
    assert report["operation_totals"]["no-notice"] == 2  # the cache rollout, the host update
    cache = _op(report, ids["cache"])
    assert (cache["kind"], cache["target"], cache["verdict"]) == (
        "platform-reboot", "cache", "no-notice",
    )  # fmt: skip
    assert sorted(cache["no_notice"]) == sorted(CACHE)
    rolled = _op(ids["rolled_up"], ids["cache"])  # by default, 20 named and all counted
    assert rolled["no_notice"] == cache["no_notice"][:20]
    assert rolled["trimmed"]["no_notice"] == len(CACHE) == 48
    assert rolled["progress"] == cache["progress"]
    assert cache["progress"].startswith("update domain 4 of 4, 0 of 48 approved, 48 got no")
    assert "cache-0, cache-1, cache-2, cache-3, cache-4 and 43 more" in cache["progress"]
    assert set(CACHE) <= set(report["no_notice"])
    # By VM: the VMs that failed first lead, each with what happened to it.
    first = report["vms"][0]
    assert (first["vm"], first["verdict"], first["polling"]) == (
        "cache-0",
        "no-notice",
        "never polled",
    )
    assert first["lines"] == ["platform-reboot: hit with no notice (Scheduled Events off)"]


def test_a_host_update_is_one_row_with_its_scopes(played: Any) -> None:
    report, ids = played
    host = _op(report, ids["host"])
    assert host["verdict"] == "no-notice" and len(host["operations"]) == 1
    scopes = {s["scope"]: s["verdict"] for s in host["scopes"]}
    assert scopes["spot"] == "no-notice" and scopes["api"] in ("ok", "warn")
    assert host["progress"].startswith(f"{len(host['scopes'])} scopes, ")
    assert "got no notice: batch_6" in host["progress"]


def test_a_rolling_reboot_is_one_row_naming_who_never_saw_it(played: Any) -> None:
    report, ids = played
    api = _op(report, ids["api"])
    assert api["verdict"] == "fail"
    assert api["batches"] == 5 and len(api["operations"]) == api["batch"] + 1 >= 2
    # api-5 and api-10 never polled; the rest stopped polling after the first batch.
    assert {"api-5", "api-10"} <= set(api["missed"])
    assert f"update domain {api['batch'] + 1} of 5, " in api["progress"]
    shown = ", ".join(api["missed"][:5])
    assert (
        f"{len(api['missed'])} never saw it: {shown} and {len(api['missed']) - 5} more"
        in (api["progress"])
    )
    # Expandable to its events: every event of every batch it made.
    events = {e["id"] for e in report["events"] if e["operation_id"] in api["operations"]}
    assert set(api["events"]) == events and len(events) >= 20


def test_never_polled_vms_are_listed_once_and_not_as_stopped(played: Any) -> None:
    report, _ = played
    never = report["never_polled"]
    assert len(never) == len(set(never))
    assert {"api-5", "api-10", *CACHE} <= set(never)
    stopped = {p["vm"] for p in report["stopped_polling"]}
    assert not stopped & set(never)
    by_vm = {v["vm"]: v for v in report["vms"]}
    assert by_vm["api-5"]["polling"] == "never polled"
    assert by_vm["api-5"]["missed"] >= 1


async def test_an_approved_event_of_an_operation_started_at_not_before_names_its_approver(
    rehearsal: Rehearsal,
) -> None:
    # A host update touching several scopes: one event per scope; one is approved, the
    # others are not, so the operation waits for NotBefore.
    host = next(
        h for h in sorted(rehearsal.fabric.topology.hosts())
        if len({vm.scope_id for vm in rehearsal.fabric.topology.vms.values() if vm.host == h}) > 1
    )  # fmt: skip
    op = rehearsal.submit("host-update", host=host)
    events = [rehearsal.fabric.event(i) for i in rehearsal.event_ids(op)]
    assert len(events) > 1
    first = events[0]
    vm = first.resources[0]
    await rehearsal.poll(vm)
    rehearsal.advance(5)
    await rehearsal.approve(vm, first.id)
    rehearsal.advance(16 * 60)
    report = await rehearsal.report()
    graded = {e["id"]: e for e in report["events"]}
    approved = graded[first.id]
    assert approved["approved_by"] == vm and approved["start_reason"] == "not_before"
    assert "nobody approved" not in approved["summary"]
    assert f"approved by {vm} " in approved["summary"]
    assert (
        "it started at NotBefore, as its operation waited for its other events"
        in (approved["summary"])
    )
    others = [graded[e.id] for e in events[1:]]
    assert all(e["approved_by"] is None and "approved by" not in e["summary"] for e in others)


def _terminal(
    report: dict[str, Any],
    everything: bool,
    monkeypatch: pytest.MonkeyPatch,
    per_vm: bool = False,
) -> str:
    """What ``forewarn report`` (``--all``: ``everything``; ``--vms``: ``per_vm``) prints
    at 80 columns."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")
    run = CliRunner().invoke(
        click.command()(lambda: print_report(report, False, everything, per_vm))
    )
    return run.output


def test_the_terminal_report_leads_with_the_roll_ups_at_80_columns(
    played: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, _ = played
    lines = _terminal(report, False, monkeypatch).splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), max(lines, key=len)
    assert lines[0] == "3 operations: 2 no-notice, 1 fail, 0 warn, 0 pending, 0 ok, 0 info"
    assert lines[2].startswith("Hit with no notice: 56 VMs: ")  # 48 of cache, 8 by host-7
    body = "\n".join(lines)
    at = [line.rstrip() for line in lines].index("Operations")
    assert lines[at + 3].startswith("no-notice") and lines[at + 3 + 4 * 0] != ""
    assert "cache" in body and "api-5, api-10" in body
    # Many VMs are counted per scope kind and scope, not listed (issue 39)
    assert "VMs that need attention, per scope kind (--vms lists each VM)" in body
    assert "VMs that failed" not in body
    assert f"Events: {len(report['events'])} (--all lists each" in body
    assert "Never polled: " in body and body.count("Never polled") == 1
    # --vms: a row per VM; not every table fits: what is left out is said, never dropped
    per_vm = _terminal(report, False, monkeypatch, per_vm=True)
    assert "VMs that failed, earliest first (showing 20 of " in per_vm
    assert "per scope kind" not in per_vm


def test_report_all_names_every_vm_of_every_line(
    played: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, _ = played
    body = " ".join(_terminal(report, True, monkeypatch).split())  # unwrapped
    assert re.search(r"and \d+ more", body) is None, body
    assert "showing 20 of" not in body
    for vm in report["never_polled"]:
        assert vm in body
    cache = _op(report, next(o["id"] for o in report["operations"] if o["target"] == "cache"))
    assert "and 43 more" in cache["progress"]  # the JSON's line is still short
    assert f"48 got no notice: {', '.join(CACHE)}" in body


def test_the_html_report_leads_with_a_summary_then_collapsed_drill_down(played: Any) -> None:
    report, ids = played
    page = ids["html"]
    rows = re.findall(r'<tr class="op filterable" id="op-([^"]+)" data-verdict="([\w-]+)"', page)
    assert [r[0] for r in rows] == [o["id"] for o in report["operations"]]
    assert rows[0][1] == "no-notice" and len(rows) == 3
    banner = re.search(r'<p class="no-notice"><strong>Hit with no notice: (\d+) VMs', page)
    assert banner is not None and int(banner.group(1)) == len(report["no_notice"]) == 56
    assert "cache-47" in page.split("<h2>Latency</h2>")[0]  # named in the summary
    # Drill-down is collapsed: VMs and events in closed <details>, a timeline per operation.
    # (and the VMs counted per scope: every name of a long list one click away)
    drills = re.findall(r'<details class="drill"( open)?>', page)
    assert set(drills) == {""} and len(drills) >= 2
    assert 'class="by-kind"' in page.split("<h2>Operations</h2>")[0]
    assert page.count('<svg class="timeline"') == 2  # the cache rollout raised no event
    # Filters by verdict, operation and scope, with no script (CSS :has on radio buttons).
    assert 'id="fv-no-notice"' in page and 'id="fv-fail"' in page and 'id="fv-ok"' not in page
    assert re.search(r'<label><input type="radio" name="fs" id="fs-\d+"> cache</label>', page)
    assert "<script" not in page
    assert len(page.encode()) < 400_000
