"""The report of a big fleet stays one screen (issue 39): the VMs that need attention are
counted per scope kind and scope, never a row per VM, unless asked for (``--vms``: in
the terminal, the HTML page's drill-down and the JSON's lists). A real server with
100,000 VMs made from a count, a host update over a dozen availability sets that no VM
polls."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.fleet_startup import fleet_yaml
from tests.support.cli import run_cli
from tests.support.serverproc import VIRTUAL, ServerProcess

#: A screen's worth of lines (a terminal 80 columns wide).
SCREEN = 50
SETS = 12  # availability sets of 100 VMs hit: more scopes than the summary shows
#: The VMs the events list so far (4 update domains of 5 walked): none of them polls.
LISTED = SETS * 80
VM_NAME = re.compile(r"\bas\d+-\d+\b")


@pytest.fixture(scope="module")
def drilled(tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    """A 100k-VM fleet after host updates of ``SETS`` availability sets, an hour on."""
    root = tmp_path_factory.mktemp("big")
    fleet = root / "fleet.yaml"
    fleet.write_text(fleet_yaml(100_000), encoding="utf-8")
    server = ServerProcess(root / "forewarn.db", ["--fleet", str(fleet), *VIRTUAL]).start()
    for k in range(SETS):
        response = server.control("POST", "/api/v1/operations",
                                  json={"kind": "host-update", "target": f"as{k}"})  # fmt: skip
        assert response.status_code == 201, response.text
    server.control("POST", "/api/v1/clock/advance", json={"seconds": 3600})
    yield server
    server.stop()


def test_the_terminal_report_is_one_screen_and_lists_vms_on_demand(
    drilled: ServerProcess,
) -> None:
    result = run_cli(["report"], drilled.control_url, columns=80)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) <= SCREEN, result.stdout
    assert "VMs that need attention, per scope kind (--vms lists each VM)" in result.stdout
    assert re.search(rf"^availability_set +{SETS} +{LISTED} ", result.stdout, re.M)
    assert "(showing 10 of 12; --all lists every scope)" in result.stdout
    assert len(set(VM_NAME.findall(result.stdout))) <= 30  # a few named, never each
    per_vm = run_cli(["report", "--vms", "--all"], drilled.control_url, columns=80)
    assert per_vm.code == 0, per_vm.stderr
    assert "VMs that failed, earliest first" in per_vm.stdout
    assert len(set(VM_NAME.findall(per_vm.stdout))) == LISTED


def _visible(page: str) -> str:
    """The page as it opens: every collapsed ``<details>`` taken out (innermost first)."""
    inner = re.compile(r"<details[^>]*>(?:(?!<details).)*?</details>", re.S)
    while True:
        shorter = inner.sub("", page)
        if shorter == page:
            return page
        page = shorter


def test_the_html_page_opens_on_counts_and_keeps_each_vm_in_its_drill_down_on_demand(
    drilled: ServerProcess, tmp_path: Path
) -> None:
    pages = {}
    for name, extra in (("default", []), ("vms", ["--vms"])):
        out = tmp_path / f"report-{name}.html"
        result = run_cli(["report", "--html", str(out), *extra], drilled.control_url)
        assert result.code == 0, result.stderr
        pages[name] = out.read_text(encoding="utf-8")
    for page in pages.values():
        shown = _visible(page)
        assert 'class="by-kind"' in shown and shown.count('class="scope-row"') == 10
        # the operations' progress names their first few VMs; before, every one that never
        # polled was listed
        assert len(set(VM_NAME.findall(shown))) <= 15 * SETS, "the page opens on a row per VM"
    # by default the whole page is bounded (its lists cut, every count whole); with --vms
    # each VM is one click away
    assert len(set(VM_NAME.findall(pages["default"]))) < LISTED
    assert f">{LISTED}<" in pages["default"] or f"{LISTED:,}" in pages["default"]
    assert len(set(VM_NAME.findall(pages["vms"]))) >= LISTED


def test_the_json_counts_every_vm_lists_them_on_demand_and_adds_the_roll_ups(
    drilled: ServerProcess,
) -> None:
    result = run_cli(["report", "--json"], drilled.control_url)
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    # bounded by default: the list cut, its whole length in ``trimmed``
    assert len(data["never_polled"]) < LISTED and data["trimmed"]["never_polled"] == LISTED
    whole = run_cli(["report", "--json", "--vms"], drilled.control_url)
    assert whole.code == 0, whole.stderr
    assert len(json.loads(whole.stdout)["never_polled"]) == LISTED  # every VM, by name
    assert len(data["by_scope"]) == SETS
    first = data["by_scope"][0]
    assert first["kind"] == "availability_set" and first["region"] == "westeurope"
    assert first["never_polled"] == first["vms"] == LISTED // SETS
    (kind,) = data["by_kind"]
    assert kind["scopes"] == SETS and kind["vms"] == kind["never_polled"] == LISTED


def test_a_small_drill_still_names_its_vms(
    start_server: Callable[..., ServerProcess],
) -> None:
    server = start_server(VIRTUAL)  # the demo fleet
    server.control("POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "web-3"})
    server.control("POST", "/api/v1/clock/advance", json={"seconds": 900})
    result = run_cli(["report"], server.control_url)
    assert result.code == 0, result.stderr
    assert "web-3" in result.stdout and "per scope kind" not in result.stdout
