"""Event Grid deliveries on the dashboard, in a real browser (Debian's Chromium, driven by
Playwright) against a real ``forewarn serve``: the card stays hidden while nothing was
delivered, then lists each attempt (answer, outcome, next retry) of each subscription."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.dashboard.browser import needs_chromium
from tests.eventgrid.webhook import Behaviour, subscription_body, webhook
from tests.support.serverproc import VIRTUAL, ServerProcess, trigger

pytestmark = needs_chromium

FLEET = """
scopes:
  - kind: standalone
    name: pub
    event_grid: true
  - kind: standalone
    name: quiet
"""


def _subscribe(server: ServerProcess, name: str, url: str) -> None:
    body = subscription_body(name, url)
    r = server.control("POST", "/api/v1/eventgrid/subscriptions", json=body)
    assert r.status_code == 201, r.text


def test_deliveries_are_listed_with_their_answers_and_retries(
    browser: Any, start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    server = start_server([*VIRTUAL, "--fleet", str(fleet), "--time-scale", "100"])
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.control_url + "/")
    page.wait_for_selector("body[data-ready]", timeout=20_000)
    assert not page.locator("#deliveries-card").is_visible()  # nothing delivered yet

    with webhook() as (url, hook), webhook(Behaviour(fail_first=1)) as (flaky_url, flaky):
        _subscribe(server, "ops", url)
        _subscribe(server, "flaky", flaky_url)
        event_id = trigger(server, "user-reboot", "pub")
        hook.wait(1)
        flaky.wait(2)  # a 500, then the retry taken
        card = page.locator("#deliveries-card")
        card.wait_for(state="visible", timeout=20_000)
        items = page.locator("#deliveries li")
        page.wait_for_function(
            "document.querySelectorAll('#deliveries li').length >= 3", timeout=20_000
        )
        lines = items.all_inner_texts()
    refused = f"flaky: Scheduled {event_id} attempt 1 -> 500 (retrying, retry in 0.1 s)"
    retried = f"flaky: Scheduled {event_id} attempt 2 -> 200 (delivered)"
    assert f"ops: Scheduled {event_id} attempt 1 -> 200 (delivered)" in lines
    assert lines.index(retried) < lines.index(refused)  # newest first
    assert page.inner_text("#delivery-count") == "last 3"
    assert errors == []
