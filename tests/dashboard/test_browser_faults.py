"""The dashboard's endpoint fault controls in a real browser (Debian's Chromium, driven
by Playwright) against a real ``forewarn serve`` that wants a token: inject faults from
the page, see them listed and met by a VM's endpoint, clear one, then every one."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import httpx

from tests.dashboard.browser import needs_chromium
from tests.support.serverproc import ServerProcess

pytestmark = needs_chromium

WEB0 = "127.1.0.1"
TOKEN = "fault-token"


def _faults(server: ServerProcess) -> list[dict[str, Any]]:
    response = httpx.get(
        server.control_url + "/api/v1/faults",
        headers={"Authorization": f"Bearer {TOKEN}"},
        trust_env=False,
    )
    assert response.status_code == 200, response.text
    out: list[dict[str, Any]] = response.json()
    return out


def _web0_status(server: ServerProcess) -> int:
    transport = httpx.HTTPTransport(local_address=WEB0)
    with httpx.Client(transport=transport, timeout=5, trust_env=False) as client:
        return client.get(
            server.imds_url + "/metadata/scheduledevents",
            params={"api-version": "2020-07-01"},
            headers={"Metadata": "true"},
        ).status_code


def test_faults_are_injected_listed_and_cleared_from_the_page(
    browser: Any, start_server: Callable[..., ServerProcess]
) -> None:
    os.environ["FOREWARN_SERVE_CONTROL_TOKEN"] = TOKEN
    try:
        server = start_server(["--clock", "virtual", "--enablement", "always", "--rate-limit", "0"])
    finally:
        del os.environ["FOREWARN_SERVE_CONTROL_TOKEN"]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.control_url + "/")
    page.wait_for_selector("#login:not([hidden])", timeout=20_000)
    page.fill("#token", TOKEN)
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("body[data-ready]", timeout=20_000)
    assert page.locator("#no-faults").is_visible()
    assert _web0_status(server) == 200

    # 410 for 70 s on the web scope: the form sends scope (a scope's name), not vm.
    page.select_option("#fault-kind", "status")
    page.select_option("#fault-status", "410")
    page.fill("#fault-target", "web")
    page.fill("#fault-for", "70")
    assert not page.locator("#fault-latency").is_visible()  # only the kind's own input
    page.click("#fault-add")
    row = page.locator("#faults tbody tr").first
    row.wait_for(timeout=20_000)
    assert row.inner_text().split("\t")[1:6] == ["status", "web", "HTTP 410", "70 s", "1"]
    [fault] = _faults(server)
    assert (fault["kind"], fault["scope"], fault["vm"], fault["status"]) == (
        "status",
        "web",
        None,
        410,
    )
    assert _web0_status(server) == 410
    assert "HTTP 410 on web" in page.inner_text("#message")

    # Latency on one VM, until cleared.
    page.select_option("#fault-kind", "latency")
    page.fill("#fault-target", "web-1")
    page.fill("#fault-for", "")
    page.fill("#fault-latency", "0.5")
    page.click("#fault-add")
    page.wait_for_selector("#faults tbody tr:nth-child(2)", timeout=20_000)
    assert page.locator("#fault-count").inner_text() == "2"
    latency = [f for f in _faults(server) if f["kind"] == "latency"]
    assert [(f["vm"], f["latency_seconds"], f["ends_at"]) for f in latency] == [
        ("web-1", 0.5, None)
    ]

    # A fault the server refuses: its one-line error shows, and nothing was added.
    page.select_option("#fault-kind", "timeout")
    page.fill("#fault-target", "no-such-vm")
    page.click("#fault-add")
    page.wait_for_selector("#message.error", timeout=20_000)
    assert "no-such-vm" in page.inner_text("#message")
    assert len(_faults(server)) == 2

    # Clear the 410 from its row: web-0 answers again; then clear every fault.
    page.click(f"#faults button.fault-remove[data-fault='{fault['id']}']")
    page.locator(f"#faults tr[data-fault='{fault['id']}']").wait_for(
        state="detached", timeout=20_000
    )
    assert [f["kind"] for f in _faults(server)] == ["latency"]
    assert _web0_status(server) == 200
    page.click("#fault-clear")
    page.wait_for_selector("#no-faults:not([hidden])", timeout=20_000)
    assert "cleared 1 fault" in page.inner_text("#message")
    assert _faults(server) == []

    # A window typed as a duration is read by the server; text that is none is refused
    # (not sent as a number it is not: no fault "until cleared" in its stead).
    page.select_option("#fault-kind", "timeout")
    page.fill("#fault-target", "web-2")
    for typed in ("1.2.3", "."):
        page.fill("#fault-for", typed)
        page.click("#fault-add")
        page.wait_for_selector("#message.error", timeout=20_000)
        assert "duration_seconds" in page.inner_text("#message")
        assert _faults(server) == []
    page.fill("#fault-for", "1m30s")
    page.click("#fault-add")
    page.locator("#faults tbody tr").first.wait_for(timeout=20_000)
    assert [f["duration_seconds"] for f in _faults(server)] == [90.0]
    assert page.locator("#faults tbody tr").first.inner_text().split("\t")[4] == "90 s"
    assert errors == []
