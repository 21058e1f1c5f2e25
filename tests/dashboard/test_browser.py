"""The dashboard in a real browser: headless Chromium (Debian's, driven by Playwright)
against a real ``forewarn serve``.

Trigger a reboot from the page, watch the event appear and count down, approve it from the
page, see it start and disappear, and see the report's verdict for it. ``.ci/run``
installs Chromium; set ``FOREWARN_DASHBOARD_SCREENSHOT=docs/dashboard.png`` to refresh
the docs' screenshot (docs/how-to/dashboard.md).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.dashboard.browser import needs_chromium
from tests.support.serverproc import VIRTUAL, ServerProcess

pytestmark = needs_chromium

WEB0 = "127.1.0.1"
TOKEN = "browser-token"


def _seconds(text: str) -> float:
    """A countdown cell as seconds: ``0:14``, ``1:02:03``, ``9.8 s``, ``due``."""
    if text == "due":
        return 0.0
    if text.endswith(" s"):
        return float(text[:-2])
    total = 0.0
    for part in text.split(":"):
        total = total * 60 + int(part)
    return total


@pytest.fixture
def polling(start_server: Callable[..., ServerProcess]) -> Iterator[ServerProcess]:
    """A server whose VM web-0 polls twice a second, like a well-behaved agent."""
    server = start_server(["--time-scale", "60", "--enablement", "always", "--rate-limit", "0"])
    stop = threading.Event()

    def poll() -> None:
        transport = httpx.HTTPTransport(local_address=WEB0)
        with httpx.Client(transport=transport, timeout=5, trust_env=False) as client:
            while not stop.is_set():
                with contextlib.suppress(httpx.HTTPError):
                    client.get(
                        server.imds_url + "/metadata/scheduledevents",
                        params={"api-version": "2020-07-01"},
                        headers={"Metadata": "true"},
                    )
                stop.wait(0.5)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    yield server
    stop.set()
    thread.join(timeout=10)


def test_reboot_countdown_approve_start_removal_and_verdict(
    browser: object, polling: ServerProcess, tmp_path: Path
) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(polling.control_url + "/")
    page.wait_for_selector("body[data-ready]", timeout=20_000)
    page.wait_for_selector("body[data-fleet-ready]", timeout=20_000)  # each scope's VMs
    assert page.locator("#fleet .vm").count() == 14  # a small fleet: every scope open
    # Ticks keep web-0's poll time moving (packed, one byte a VM): 4.5 s after the snapshot
    # it still polled "now" (the snapshot alone would say 3s); web-1 never asked.
    page.wait_for_timeout(4500)
    assert page.inner_text("[data-vm='web-0'] .age") == "now"
    assert page.inner_text("[data-vm='web-1'] .age") == "never"

    # Trigger a user reboot of web-0 from the page.
    page.select_option("#op-kind", "user-reboot")
    page.fill("#op-target", "web-0")
    page.click("#op-trigger")
    row = page.locator("#events tbody tr[data-status=Scheduled]")
    row.wait_for(timeout=20_000)
    event_id = row.get_attribute("data-event")
    assert event_id and re.fullmatch(r"[0-9A-F-]{36}", event_id)
    assert "web-0" in row.locator(".resources").inner_text()

    # It counts down (15 min of notice are 15 s at time scale 60).
    countdown = row.locator(".countdown")
    first = _seconds(countdown.inner_text())
    page.wait_for_timeout(1500)
    second = _seconds(countdown.inner_text())
    assert 0 < second < first <= 15
    page.wait_for_selector("#fleet .vm[data-vm='web-0'] .age.fresh", timeout=10_000)
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size < 300_000
    wanted = os.environ.get("FOREWARN_DASHBOARD_SCREENSHOT")
    if wanted:
        shutil.copyfile(shot, wanted)

    # The fleet filter: by VM name or host (the server searches); only scopes with a match.
    page.fill("#vm-filter", "web-1")
    page.wait_for_function("() => document.querySelectorAll('#fleet .vm').length === 1")
    assert page.locator("#fleet .vm").all_inner_texts() == ["web-1\nnever"]
    assert page.locator("#fleet details.scope").count() == 1
    page.fill("#vm-filter", "host-4")
    page.wait_for_function("() => document.querySelectorAll('#fleet .vm').length === 3")
    shown = {t.split("\n")[0] for t in page.locator("#fleet .vm").all_inner_texts()}
    assert shown == {"web-3", "workers_0", "jumpbox"}
    page.fill("#vm-filter", "")
    page.wait_for_function("() => document.querySelectorAll('#fleet .vm').length === 14")

    # Approve it from the page: it starts, then disappears when the reboot is over.
    row.locator("button[data-action=approve]").click()
    started = page.locator(f"#events tbody tr[data-event='{event_id}'][data-status=Started]")
    started.wait_for(timeout=20_000)
    assert "operator" in started.locator(".approved").inner_text()
    page.locator(f"#events tbody tr[data-event='{event_id}']").wait_for(
        state="detached", timeout=60_000
    )
    assert page.locator("#no-events").is_visible()

    # The report's verdict: web-0 saw it in time and the operator approved it.
    verdict = page.locator(f"#verdicts tbody tr[data-event='{event_id}']")
    verdict.wait_for(timeout=20_000)
    page.wait_for_function(
        "id => document.querySelector(`#verdicts tr[data-event='${id}']`).dataset.verdict === 'ok'",
        arg=event_id,
        timeout=20_000,
    )
    summary = verdict.locator(".summary").inner_text()
    assert summary.startswith("web-0 saw it after")
    assert "approved by the operator" in summary
    assert page.locator("#history li[data-kind='event.completed']").count() >= 1
    assert errors == []


def test_with_a_token_the_page_asks_for_it_and_keeps_it_in_the_tab(
    browser: object, start_server: Callable[..., ServerProcess]
) -> None:
    os.environ["FOREWARN_SERVE_CONTROL_TOKEN"] = TOKEN
    try:
        server = start_server(["--enablement", "always"])
    finally:
        del os.environ["FOREWARN_SERVE_CONTROL_TOKEN"]
    page = browser.new_page()  # type: ignore[attr-defined]
    page.goto(server.control_url + "/")
    page.wait_for_selector("#login:not([hidden])", timeout=20_000)
    page.fill("#token", "wrong")
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("#login:not([hidden])", timeout=20_000)
    page.wait_for_function("document.querySelector('#login-error').textContent.length > 0")
    page.fill("#token", TOKEN)
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("body[data-ready]", timeout=20_000)
    assert page.evaluate("sessionStorage.getItem('forewarn-token')") == TOKEN
    assert page.evaluate("document.cookie") == ""
    page.select_option("#op-kind", "user-reboot")
    page.fill("#op-target", "web-3")
    page.click("#op-trigger")
    page.locator("#events tbody tr[data-status=Scheduled]").wait_for(timeout=20_000)
    page.click("#logout")
    page.wait_for_selector("#login:not([hidden])")
    assert page.evaluate("sessionStorage.getItem('forewarn-token')") is None


def test_a_scenario_plays_from_the_page(
    browser: object, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(VIRTUAL)
    page = browser.new_page()  # type: ignore[attr-defined]
    page.goto(server.control_url + "/")
    page.wait_for_selector("body[data-ready]", timeout=20_000)
    assert page.locator("#advance-form").is_visible()  # a virtual clock can be advanced
    page.select_option("#scenario-name", "user-reboot")
    page.click("#scenario-run")
    page.wait_for_selector("#scenario-status[data-status=held]", timeout=90_000)
    assert "every expectation held" in page.inner_text("#scenario-status")
    page.wait_for_selector("#history li[data-kind='event.completed']", timeout=20_000)
