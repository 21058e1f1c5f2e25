"""The two lists of the page that grew with the fleet, in Chromium (issue 39): the target
fields suggest only the few names the server finds as a user types (never every scope
as an option), and the live events table draws a page of them, counts them all, pages on,
filters, and its buttons act on the rows drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.dashboard.browser import needs_chromium
from tests.support.serverproc import ServerProcess

pytestmark = needs_chromium
JSON = {"Content-Type": "application/json"}


def _fleet(tmp_path: Path, sets: int, vms: int) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text("\n".join([
        "default_vm: as0-0",
        "scopes:",
        *(f"  - {{kind: availability_set, name: as{k}, vms: {vms}, update_domains: 2}}"
          for k in range(sets)),
    ]) + "\n", encoding="utf-8")  # fmt: skip
    return path


def _open(browser: Any, server: ServerProcess) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.control_url + "/")
    page.wait_for_selector("body[data-ready]", timeout=30_000)
    return page, errors


def _options(page: Any, datalist: str) -> list[dict[str, str]]:
    return page.eval_on_selector_all(  # type: ignore[no-any-return]
        f"#{datalist} option", "els => els.map(o => ({value: o.value, kind: o.dataset.kind}))"
    )


def test_the_target_field_suggests_what_the_server_finds_and_triggers_on_it(
    browser: object, start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    sets = 60  # more scopes than the page lists: 3,000 VMs
    server = start_server(["--fleet", str(_fleet(tmp_path, sets, 50)), "--clock", "virtual",
                           "--rate-limit", "0", "--enablement", "always"])  # fmt: skip
    page, errors = _open(browser, server)
    everything = "() => [...document.querySelectorAll('option')].map(o => o.value)"
    assert not {f"as{k}" for k in range(sets)} & set(page.evaluate(everything))

    page.fill("#op-target", "as4")
    page.wait_for_selector("#targets option[value='as4']", state="attached", timeout=10_000)
    offered = _options(page, "targets")
    assert len(offered) == 20 and all(o["value"].startswith("as4") for o in offered)
    assert {"scope", "vm"} <= {o["kind"] for o in offered}
    total = 11 * 50 + 11  # as4, as40 … as49 and their VMs
    assert page.inner_text("#op-target-more") == f"20 of {total} suggested: type more to narrow"

    page.fill("#op-target", "as41-1")  # narrower: as41-1, as41-10 … as41-19
    page.wait_for_function(
        "() => document.querySelectorAll('#targets option').length === 11", timeout=10_000
    )
    assert _options(page, "targets")[0] == {"value": "as41-1", "kind": "vm"}
    assert page.inner_text("#op-target-more") == ""
    page.fill("#op-target", "host-3")
    page.wait_for_selector("#targets option[value='host-3'][data-kind=host]", state="attached")

    page.fill("#op-target", "as41-17")  # a suggested VM, picked
    page.wait_for_selector("#targets option[value='as41-17']", state="attached")
    page.select_option("#op-kind", "user-reboot")
    page.click("#op-trigger")
    page.wait_for_function("() => document.querySelector('#message').textContent.includes("
                           "'user-reboot on vm as41-17')", timeout=10_000)  # fmt: skip
    (op,) = server.control("GET", "/api/v1/operations").json()
    assert op["kind"] == "user-reboot" and op["vms"] == ["as41-17"]

    # The fault form takes a VM or a scope: hosts are never suggested there.
    page.fill("#fault-target", "h")
    none = "() => document.querySelector('#fault-target-more').dataset.total === '0'"
    page.wait_for_function(none)
    assert _options(page, "fault-targets") == []
    page.fill("#fault-target", "as5")
    page.wait_for_selector("#fault-targets option[value='as5']", state="attached")
    assert {o["kind"] for o in _options(page, "fault-targets")} == {"vm", "scope"}
    scopes = set(page.evaluate(everything)) & {f"as{k}" for k in range(sets)}
    # 20 shared by the two kinds: as5, as50 … as58 and 10 VMs; never all 60 scopes
    assert scopes == {"as5", *(f"as5{k}" for k in range(9))}
    assert errors == []


def test_the_live_events_table_draws_a_page_and_its_buttons_act_on_it(
    browser: object, start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    sets = 150  # a host update over update domain 0 of each: 150 live events at once
    server = start_server(["--fleet", str(_fleet(tmp_path, sets, 2)), "--clock", "virtual",
                           "--rate-limit", "0", "--enablement", "always"])  # fmt: skip
    rollout = server.control("POST", "/api/v1/operations", headers=JSON,
                             json={"kind": "host-update", "region": True,
                                   "wave_hosts": 1000})  # fmt: skip
    assert rollout.status_code == 201, rollout.text
    reboot = server.control("POST", "/api/v1/operations", headers=JSON,
                            json={"kind": "user-reboot", "target": "as0-1"})  # fmt: skip
    (underway,) = reboot.json()["event_ids"]
    started = server.control("POST", f"/api/v1/events/{underway}/start", json={}, headers=JSON)
    assert started.status_code == 200, started.text
    live = server.control("GET", "/api/v1/events").json()
    count = len(live)
    assert count == sets + 1
    page, errors = _open(browser, server)

    def drawn() -> list[str]:
        return page.eval_on_selector_all(  # type: ignore[no-any-return]
            "#events tbody tr", "els => els.map(e => e.dataset.event)"
        )

    assert len(drawn()) == 100
    assert drawn()[0] == underway  # the events underway first, then the soonest NotBefore
    assert page.inner_text("#event-count") == str(count)
    shown = page.locator("#events-shown")
    assert shown.inner_text().startswith(f"showing 1 to 100 of {count}")
    first = set(drawn())
    shown.locator("button", has_text="next").click()
    page.wait_for_function("() => document.querySelectorAll('#events tbody tr').length === 51")
    assert shown.inner_text().startswith(f"showing 101 to {count} of {count}")
    assert shown.locator("button", has_text="next").is_disabled()
    second = set(drawn())
    assert not first & second and first | second == {e["id"] for e in live}
    assert page.inner_text("#event-count") == str(count)  # the badge keeps the whole count

    # Approve a row of the second page: that event is approved (the API says so); the row
    # says by whom and offers Approve no more.
    target = sorted(second)[0]
    row = page.locator(f"#events tbody tr[data-event='{target}']")
    row.locator("button[data-action=approve]").click()
    row.locator("button[data-action=approve]").wait_for(state="detached", timeout=10_000)
    assert "operator" in row.locator(".approved").inner_text()
    approved = server.control("GET", f"/api/v1/events/{target}").json()
    assert approved["approved_by"] == "control"
    others = [e for e in server.control("GET", "/api/v1/events").json() if e["id"] != target]
    assert len(others) == count - 1 and not any(e["approved_by"] for e in others)

    # Start it from the page: the API says Started (the wave's events start together);
    # the filter finds it by its id, underway, with a Complete button.
    row.locator("button[data-action=start]").click()
    page.wait_for_function(
        "() => document.querySelectorAll('#events tbody tr[data-status=Scheduled]').length === 0"
    )  # fmt: skip
    assert server.control("GET", f"/api/v1/events/{target}").json()["status"] == "Started"
    assert page.inner_text("#event-count") == str(count)
    page.fill("#event-filter", target.lower())  # ignoring case
    page.wait_for_function("() => document.querySelectorAll('#events tbody tr').length === 1")
    assert drawn() == [target]
    assert row.get_attribute("data-status") == "Started"
    assert row.locator("button[data-action=complete]").count() == 1

    # A filter by text: the events of as14, as140 … as149, one page.
    page.fill("#event-filter", "as14")
    page.wait_for_function("() => document.querySelectorAll('#events tbody tr').length === 11")
    assert shown.inner_text() == f'showing 1 to 11 of 11 matching "as14" (of {count} live)'
    scopes = page.eval_on_selector_all(
        "#events tbody tr td:nth-child(3)", "els => els.map(e => e.textContent)"
    )  # fmt: skip
    assert sorted(scopes) == sorted(["as14", *(f"as14{k}" for k in range(10))])
    page.fill("#event-filter", "")
    page.wait_for_function("() => document.querySelectorAll('#events tbody tr').length === 100")
    assert errors == []
