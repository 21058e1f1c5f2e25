"""Repeated drills in the dashboard (Chromium, driven by Playwright, against a real
``forewarn serve``): after ``fleet reset`` the page shows the current drill only, says
when it began, gives each operation its creation time, and looks back at the drills
before on request; a reset while the page is open moves it on to the new drill."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.dashboard.browser import needs_chromium
from tests.support.serverproc import VIRTUAL, ServerProcess
from tests.support.waiting import wait_until

pytestmark = needs_chromium
JSON = {"Content-Type": "application/json"}


def _post(server: ServerProcess, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = server.control("POST", path, headers=JSON, json=body)
    assert response.status_code in (200, 201), response.text
    out: dict[str, Any] = response.json()
    return out


def _rows(page: Any) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = page.evaluate(
        "[...document.querySelectorAll('#operations tbody tr.op')].map((r) => ({"
        "id: r.dataset.operation, cls: r.className,"
        "cells: [...r.cells].map((c) => c.textContent.trim()).join('|')}))"
    )
    return rows


def _until_rows(page: Any, count: int) -> None:
    """Wait for ``count`` operation rows (the page's CSP forbids wait_for_function's eval)."""
    wait_until(lambda: len(_rows(page)) == count, 30, f"{count} operation rows")


def test_the_dashboard_shows_the_current_drill_and_looks_back(
    browser: Any, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(VIRTUAL)
    first = _post(server, "/api/v1/operations", {"kind": "user-reboot", "vms": ["web-0"]})
    _post(server, "/api/v1/clock/advance", {"seconds": 3600})
    reset = _post(server, "/api/v1/fleet/reset", {})
    _post(server, "/api/v1/clock/advance", {"seconds": 60})
    second = _post(server, "/api/v1/operations", {"kind": "user-reboot", "vms": ["web-0"]})

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.control_url + "/")
    page.wait_for_selector("body[data-ready]", timeout=30_000)
    page.wait_for_selector("#operations tbody tr.op", timeout=30_000)

    # By default: the drill since the reset, which the page names.
    rows = _rows(page)
    assert [r["id"] for r in rows] == [second["id"]]
    assert page.locator("#drill-note").is_visible()
    clock = page.evaluate(f"new Date({reset['at']} * 1000).toISOString().slice(11, 19)")
    assert f"Fleet reset at {clock}: showing the drill since then" in page.inner_text("#drill-note")
    headers = page.eval_on_selector_all("#operations thead th", "hs => hs.map(h => h.textContent)")
    assert headers[:3] == ["verdict", "created", "operation"]
    created = page.evaluate(f"new Date({second['created_at']} * 1000).toISOString().slice(11, 19)")
    assert rows[0]["cells"].split("|")[1] == created

    # The history strip marks where the drill began.
    marks = page.eval_on_selector_all(
        "#history-strip line.reset title", "ts => ts.map(t => t.textContent)"
    )
    assert marks == [f"{clock} fleet reset: a new drill"]

    # Looking back: every drill, the earlier one's operation marked as such.
    assert page.eval_on_selector("#drill-filter", "s => s.value") == "current"
    page.select_option("#drill-filter", "all")
    _until_rows(page, 2)
    by_id = {r["id"]: r for r in _rows(page)}
    assert "earlier-drill" in by_id[first["id"]]["cls"]
    assert "earlier drill" in by_id[first["id"]]["cells"]
    assert "earlier-drill" not in by_id[second["id"]]["cls"]

    # A reset while the page is open: the current drill is the new one (nothing yet).
    page.select_option("#drill-filter", "current")
    _until_rows(page, 1)
    _post(server, "/api/v1/clock/advance", {"seconds": 60})  # (a frozen clock: not at once)
    again = _post(server, "/api/v1/fleet/reset", {})
    _until_rows(page, 0)
    options = page.eval_on_selector_all("#drill-filter option", "os => os.map(o => o.value)")
    assert options == ["current", str(reset["at"]), "all"]
    clock = page.evaluate(f"new Date({again['at']} * 1000).toISOString().slice(11, 19)")
    wait_until(lambda: f"Fleet reset at {clock}" in page.inner_text("#drill-note"), 30)
    page.select_option("#drill-filter", str(reset["at"]))  # the drill before, looked back at
    _until_rows(page, 1)
    assert [r["id"] for r in _rows(page)] == [second["id"]]
    assert errors == []
