"""The dashboard in Chromium after a region rollout gave each of 3,001 VMs an event: the
VMs and Reactions cards read the rolled-up verdict (one row a scope, the newest events,
counted in full) and a scope's VMs come when it is opened (issue 39)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dashboard.browser import needs_chromium
from tests.support.regionfleet import rolled_out
from tests.support.serverproc import ServerProcess

pytestmark = needs_chromium
SCOPES, PER_SCOPE = 20, 150


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    started = rolled_out(tmp_path / "region", SCOPES, PER_SCOPE)
    yield started
    started.stop()


def test_the_cards_list_scopes_and_open_one_to_its_vms(
    browser: object, server: ServerProcess
) -> None:
    report = server.control("GET", "/api/v1/reactions").json()
    events = report["trimmed"]["events"]
    vms = SCOPES * PER_SCOPE + 1
    assert report["trimmed"]["vms"] == vms and events > 100

    page = browser.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page.goto(server.control_url + "/")
    page.wait_for_selector("#vm-rollup tbody tr.vm-scope", timeout=30_000)
    scopes = page.locator("#vm-rollup tbody tr.vm-scope")
    assert scopes.count() == SCOPES + 1  # a row a scope, not a row a VM
    assert page.locator("#vm-rollup tbody tr[data-vm]").count() == 0
    assert f"{vms} in events or not polling, in {SCOPES + 1} scopes" in page.inner_text(
        "#vm-totals"
    )
    row = page.locator("#vm-rollup tbody tr.vm-scope[data-vm-scope='as3']")
    assert f"{PER_SCOPE} VMs" in row.inner_text()
    assert f"{PER_SCOPE} needing attention" in row.inner_text()
    # Reactions: the newest 100 events drawn, every one counted.
    assert page.locator("#verdicts tbody tr").count() == 100
    assert f"of the newest 100 of {events} events" in page.inner_text("#verdicts-shown")
    assert f"Never polled ({vms})" in page.inner_text("#silent")
    # A scope opened: its VMs, the first page of them, and how many there are.
    row.click()
    page.wait_for_selector("#vm-rollup tbody tr[data-vm]", timeout=10_000)
    names = page.eval_on_selector_all(
        "#vm-rollup tbody tr[data-vm]", "rs => rs.map(r => r.dataset.vm)"
    )
    assert len(names) == 100 and all(n.startswith("as3-") for n in names)
    assert f"showing 100 of {PER_SCOPE} VMs needing attention of as3" in page.inner_text(
        "#vm-rollup"
    )
    # The filter asks the server again: no VM of as3 approved anything.
    page.select_option("#vm-verdict-filter", "approved")
    page.wait_for_function("!document.querySelector('#vm-rollup tbody tr[data-vm]')")
    page.wait_for_selector("text=No VM with verdict approved in as3", timeout=10_000)
    row.click()  # folded again
    page.wait_for_function("!document.querySelector('#vm-rollup tbody tr.vm-scope-more')")


MANY = 600  # availability sets of 2 VMs: more scopes of a kind than the verdict keeps


@pytest.fixture
def many_scopes(tmp_path: Path) -> Iterator[ServerProcess]:
    started = rolled_out(tmp_path / "sets", MANY, 2)
    yield started
    started.stop()


def test_the_cards_count_every_scope_when_the_verdict_keeps_the_worst(
    browser: object, many_scopes: ServerProcess
) -> None:
    report = many_scopes.control("GET", "/api/v1/reactions").json()
    assert report["trimmed"]["by_scope"] == MANY + 1 and len(report["by_scope"]) == 51

    page = browser.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page.goto(many_scopes.control_url + "/")
    page.wait_for_selector("#vm-rollup tbody tr.vm-scope", timeout=30_000)
    vms = 2 * MANY + 1
    assert page.inner_text("#vm-totals") == (
        f"{vms} in events or not polling, events in {MANY + 1} scopes, VMs needing attention "
        f"in {MANY + 1} scopes · {vms} needing attention (each scope's VMs when opened)"
    )
    assert page.locator("#vm-rollup tbody tr.vm-scope").count() == 51  # the rows kept
    assert f"of {MANY + 1} with events and {MANY + 1} needing attention" in page.inner_text(
        "#vm-shown"
    )
    # The fleet: the kind's and the region's VMs needing attention are every scope's.
    kind = page.locator("[data-counts='k:westeurope|availability_set']")
    page.wait_for_function(
        "document.querySelector(\"[data-counts='k:westeurope|availability_set']\")"
        ".textContent.includes('needing attention')",
        timeout=30_000,
    )
    assert f"{2 * MANY:,} needing attention" in kind.inner_text()
    assert f"{vms:,} needing attention" in page.inner_text("[data-counts='r:westeurope']")
    # The filter finds a scope the verdict did not keep: the server searches every one.
    assert page.locator("#vm-rollup tbody tr[data-vm-scope='as300']").count() == 0
    page.fill("#vm-rollup-filter", "as30")
    page.wait_for_selector("#vm-rollup tbody tr[data-vm-scope='as300']", timeout=10_000)
    found = page.eval_on_selector_all(
        "#vm-rollup tbody tr.vm-scope", "rs => rs.map(r => r.dataset.vmScope)"
    )
    assert sorted(found) == sorted(["as30", *(f"as30{k}" for k in range(10))])
    assert page.inner_text("#vm-shown") == '11 scopes named "as30"'
